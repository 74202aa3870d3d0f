/** `NS/NAME` as given, or NAME in the namespace of `-n`. */
export function qualified(name: string, namespace: string): string {
  return name.includes('/') ? name : `${namespace}/${name}`;
}
