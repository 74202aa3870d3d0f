/**
 * Redaction: the one place that knows what a credential looks like. Everything that logs, stores
 * or reports text that may carry one (registry responses and errors, git's output and commands,
 * URLs in messages, recorded responses in the store) passes it through here.
 *
 * Two layers: by shape (credential headers, token fields in JSON, token-like query parameters,
 * URL userinfo, `Bearer`/`Basic` credentials, well-known token formats) and by value (every
 * password and token the caller knows is replaced wherever it appears).
 */

/** The mask in records and registry messages. git's messages use `***`, as git users expect. */
export const REDACTED = '[redacted]';

/** HTTP headers whose whole value is a credential. */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-registry-auth',
  'x-amz-security-token',
]);

/** Names whose value is a credential, as a JSON field or a URL query parameter (any case). */
export const SECRET_FIELDS: readonly string[] = [
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'identitytoken',
  'registrytoken',
  'password',
  'passwd',
  'secret',
  'client_secret',
  'auth',
];

/** Query parameters that sign or authorise a URL (object-store redirects, OAuth callbacks). */
export const SECRET_PARAMS: readonly string[] = [
  ...SECRET_FIELDS,
  'sig',
  'signature',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
  'x-goog-signature',
  'x-goog-credential',
  'code',
  'key',
];

/** Headers whose value holds URLs (pagination, redirects). */
const URL_HEADERS = new Set(['link', 'location', 'content-location']);

const PARAM_IN_TEXT = new RegExp(`([?&;])(${SECRET_PARAMS.join('|')})=[^&\\s#"'<>]*`, 'gi');
const JSON_FIELD = new RegExp(`("(?:${SECRET_FIELDS.join('|')})"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'gi');
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^/\s@'"]+@/gi;
const AUTHORIZATION = /(authorization:\s*(?:basic|bearer|token)\s+)[^\s"'\\]+/gi;
// A token68 credential after a scheme; `Bearer realm="…"` (a challenge) is not one.
const SCHEME_CREDENTIAL = /\b(Bearer|Basic)\s+(?![A-Za-z0-9_-]+=")[A-Za-z0-9._~+/-]{8,}=*/g;
const EXTRAHEADER = /(extraheader\s*=?\s*)(["']?)[^\n"']*/gi;
const TOKEN_FORMATS =
  /\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]+)\b/g;

export interface RedactOptions {
  /** Values to remove wherever they appear (shorter than 4 characters: ignored). */
  secrets?: Iterable<string>;
  /** What replaces a secret (default `[redacted]`). */
  mask?: string;
}

/**
 * Something each pattern above needs to match (`@`, `"`, `=`, or a word of it, in any case): most
 * header values and short texts have none, and one search is cheaper than seven replaces (a
 * scan records and redacts every response it reads).
 */
const ANY_PATTERN = /[@="]|authorization|bearer|basic|extraheader|gh[pousr]_|github_pat_|glpat-|xox[abpr]-/i;
/** One of the SECRET_FIELDS names (any case): JSON_FIELD cannot match without one. */
const FIELD_NAME = new RegExp(SECRET_FIELDS.join('|'), 'i');
const AUTHORIZATION_WORD = /authorization/i;
const EXTRAHEADER_WORD = /extraheader/i;
const TOKEN_PREFIX = /gh[pousr]_|github_pat_|glpat-|xox[abpr]-/;

/**
 * Each replace of redactText after a test of something its pattern cannot match without, on the
 * text as it is at that step: the same result as running all seven, without seven scans of every
 * response body (a tag list has `"` and `=` but rarely a credential's shape).
 */
const STEPS: readonly [need: (text: string) => boolean, apply: (text: string, mask: string) => string][] = [
  [(t) => t.includes('@') && t.includes('://'), (t, m) => t.replace(USERINFO, `$1${m}@`)],
  [(t) => AUTHORIZATION_WORD.test(t), (t, m) => t.replace(AUTHORIZATION, `$1${m}`)],
  [(t) => t.includes('Bearer') || t.includes('Basic'), (t, m) => t.replace(SCHEME_CREDENTIAL, `$1 ${m}`)],
  [(t) => EXTRAHEADER_WORD.test(t), (t, m) => t.replace(EXTRAHEADER, `$1$2${m}`)],
  [(t) => TOKEN_PREFIX.test(t), (t, m) => t.replace(TOKEN_FORMATS, m)],
  [(t) => t.includes('"') && FIELD_NAME.test(t), (t, m) => t.replace(JSON_FIELD, `$1"${m}"`)],
  [(t) => t.includes('='), (t, m) => t.replace(PARAM_IN_TEXT, `$1$2=${m}`)],
];

/** Text of any kind: log lines, error messages, response bodies, git's stderr. */
export function redactText(text: string, opts: RedactOptions = {}): string {
  const mask = opts.mask ?? REDACTED;
  let out = text;
  for (const s of opts.secrets ?? []) if (s.length >= 4 && out.includes(s)) out = out.split(s).join(mask);
  if (!ANY_PATTERN.test(out)) return out;
  // By index, not `for (const [need, apply] of STEPS)`: without the optimizing compiler (one-shot
  // commands) each step made an iterator for the list and another for the pair (issue 27).
  for (let i = 0; i < STEPS.length; i++) {
    const step = STEPS[i]!;
    if (step[0](out)) out = step[1](out, mask);
  }
  return out;
}

/**
 * redactText without the tests before each replace: what it must equal for every text
 * (test/util/redact.test.ts compares the two).
 */
export function redactTextEveryPattern(text: string, opts: RedactOptions = {}): string {
  const mask = opts.mask ?? REDACTED;
  let out = text;
  for (const s of opts.secrets ?? []) if (s.length >= 4 && out.includes(s)) out = out.split(s).join(mask);
  for (const [, apply] of STEPS) out = apply(out, mask);
  return out;
}

/** A URL on its own: userinfo removed, secret query parameters masked. */
export function redactUrl(url: string, opts: RedactOptions = {}): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return redactText(url, opts);
  }
  if (u.username || u.password) {
    u.username = '';
    u.password = '';
  }
  // Secret query parameters are masked by redactText, unencoded, as in any other text.
  return redactText(u.toString(), opts);
}

export interface HeaderOptions extends RedactOptions {
  /** Leave credential headers out instead of masking them (what the store keeps). */
  drop?: boolean;
}

/** Headers that can be walked like fetch's `Headers` (which is one). */
export interface HeaderList {
  forEach(fn: (value: string, name: string) => void): void;
}

const isHeaderList = (h: HeaderList | Readonly<Record<string, string>>): h is HeaderList =>
  typeof (h as Partial<HeaderList>).forEach === 'function';

/** Response or request headers, keys lower-cased. */
export function redactHeaders(
  headers: HeaderList | Readonly<Record<string, string>>,
  opts: HeaderOptions = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  const entries: [string, string][] = [];
  if (isHeaderList(headers)) headers.forEach((v, k) => entries.push([k, v]));
  else entries.push(...Object.entries(headers));
  for (const [name, value] of entries) {
    const k = name.toLowerCase();
    if (SECRET_HEADERS.has(k)) {
      if (!opts.drop) out[k] = opts.mask ?? REDACTED;
    } else if (URL_HEADERS.has(k)) {
      out[k] = redactText(
        value.replace(/https?:\/\/[^\s<>"]+/g, (m) => redactUrl(m, opts)),
        opts,
      );
    } else out[k] = redactText(value, opts);
  }
  return out;
}

/** A recorded HTTP exchange: its URL, headers and body. */
export function redactExchange<
  T extends { url: string; headers: Readonly<Record<string, string>>; body: string },
>(r: T, opts: HeaderOptions = {}): T {
  return {
    ...r,
    url: redactUrl(r.url, opts),
    headers: redactHeaders(r.headers, opts),
    body: redactText(r.body, opts),
  };
}

/**
 * Exchanges redacted here by shape with the default mask, then frozen: redacting their headers
 * (other than those holding URLs) and body again by shape gives them back unchanged
 * (test/util/redact.test.ts checks it), so the store's second pass over a registry client's
 * record redoes only the URL and leaves credential headers out. Anything not sealed (built
 * elsewhere, read back from JSON, carrying a registry's Link or Location) gets the whole pass.
 */
const sealed = new WeakSet<object>();

/** Whether `r` is an exchange `Redactor.seal` redacted and froze. */
export function isSealedExchange(r: object): boolean {
  return sealed.has(r);
}

/** Remembers the secrets one client has seen (passwords, tokens) and redacts with them. */
export class Redactor {
  private readonly values = new Set<string>();

  constructor(private readonly mask: string = REDACTED) {}

  /** Remember a secret value (a password, a token) to scrub from any text. */
  add(value: string | undefined): void {
    if (value && value.length >= 4) this.values.add(value);
  }

  private get opts(): RedactOptions {
    return { secrets: this.values, mask: this.mask };
  }

  text(s: string): string {
    return redactText(s, this.opts);
  }

  url(u: string): string {
    return redactUrl(u, this.opts);
  }

  headers(h: HeaderList | Readonly<Record<string, string>>): Record<string, string> {
    return redactHeaders(h, this.opts);
  }

  /**
   * Freezes an exchange whose headers and body went through this redactor's `headers` and `text`
   * (anything appended after must hold no credential), and seals it (`isSealedExchange`) when
   * this redactor masks as the store does and no header holds a URL (a registry's Link can be
   * text that reads differently once masked).
   */
  seal<T extends { url: string; headers: Readonly<Record<string, string>>; body: string }>(
    r: T,
  ): Readonly<T> {
    Object.freeze(r.headers);
    Object.freeze(r);
    if (this.mask === REDACTED && !Object.keys(r.headers).some((k) => URL_HEADERS.has(k))) sealed.add(r);
    return r;
  }
}
