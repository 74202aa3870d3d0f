/** Where a store is, for messages: the URL without its password. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}
