/**
 * Redaction of what the client records and logs. Two layers: by shape (credential headers,
 * token fields in JSON bodies, token-like query parameters) and by value (every password and
 * token this client knows is replaced wherever it appears).
 */
const SECRET_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'set-cookie',
  'cookie',
  'x-registry-auth',
  'x-amz-security-token',
]);
const SECRET_PARAMS =
  /^(token|access_token|refresh_token|id_token|password|passwd|secret|signature|sig|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|code|key)$/i;
const SECRET_JSON_FIELD =
  /("(?:token|access_token|refresh_token|id_token|identitytoken|password|secret)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi;
export const REDACTED = '[redacted]';

export class Redactor {
  private readonly values = new Set<string>();

  /** Remember a secret value (a password, a token) to scrub from any text. */
  add(value: string | undefined): void {
    if (value && value.length >= 4) this.values.add(value);
  }

  text(s: string): string {
    let out = s.replace(SECRET_JSON_FIELD, `$1"${REDACTED}"`);
    for (const v of this.values) if (out.includes(v)) out = out.split(v).join(REDACTED);
    return out;
  }

  url(u: string): string {
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      return this.text(u);
    }
    if (parsed.username || parsed.password) {
      parsed.username = '';
      parsed.password = '';
    }
    for (const k of [...parsed.searchParams.keys()])
      if (SECRET_PARAMS.test(k)) parsed.searchParams.set(k, REDACTED);
    return this.text(parsed.toString());
  }

  headers(h: Headers): Record<string, string> {
    const out: Record<string, string> = {};
    h.forEach((value, key) => {
      const k = key.toLowerCase();
      if (SECRET_HEADERS.has(k)) out[k] = REDACTED;
      else if (k === 'location' || k === 'link' || k === 'content-location') out[k] = this.linkish(value);
      else out[k] = this.text(value);
    });
    return out;
  }

  private linkish(v: string): string {
    return v
      .replace(/https?:\/\/[^\s<>"]+/g, (m) => this.url(m))
      .replace(/([?&])(token|access_token|signature|x-amz-signature)=[^&>\s]*/gi, `$1$2=${REDACTED}`);
  }
}
