/**
 * The Docker reference grammar (distribution/reference), for ImageRepository `spec.image`,
 * which names a repository only: no scheme, no tag, no digest.
 */
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*';
const NAME = new RegExp(`^(?:(${DOMAIN})/)?(${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)$`);
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;

/** Why `image` is not a valid repository name, with what to write instead; undefined when it is fine. */
export function imageRepositoryProblem(image: string): string | undefined {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(image);
  if (scheme) {
    const rest = image
      .slice(scheme[0].length)
      .replace(/@.*$/, '')
      .replace(/:[\w][\w.-]*$/, '')
      .replace(/\/+$/, '');
    return `"${image}" has a scheme (${scheme[1]}://); write the repository without it, e.g. "${rest}"`;
  }
  const at = image.indexOf('@');
  if (at >= 0) {
    return `"${image}" has a digest; spec.image names a repository only, e.g. "${image.slice(0, at)}" (the policy picks the tag)`;
  }
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  if (colon >= 0 && TAG.test(image.slice(colon + 1))) {
    return `"${image}" has a tag; spec.image names a repository only, e.g. "${image.slice(0, colon)}" (the policy picks the tag)`;
  }
  if (image.length > 255) return `"${image.slice(0, 40)}…" is longer than 255 characters`;
  const m = NAME.exec(image);
  if (!m) {
    if (/[A-Z]/.test(image.slice(image.indexOf('/') + 1))) {
      return `"${image}" is not a valid image repository: the path must be lowercase`;
    }
    return `"${image}" is not a valid image repository; write it like "ghcr.io/org/app" or "nginx"`;
  }
  return undefined;
}

/** True for a digest like `sha256:…`. */
export function isDigest(s: string): boolean {
  return DIGEST.test(s);
}

/** The OCI distribution tag grammar, in words for error messages. */
export const TAG_RULE =
  'a tag is 1 to 128 characters: letters, digits and "_" first, then letters, digits, "_", "." and "-"';

/**
 * True when `tag` is a tag under the OCI distribution grammar `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
 * Anything else — `../x`, white space, control characters, YAML — is not a tag, wherever it comes
 * from (a person or a registry).
 */
export function isValidTag(tag: string): boolean {
  return TAG.test(tag);
}
