/**
 * A second line of defence before recorded registry responses are written to disk: the client
 * already redacts, but nothing that can carry a credential may reach the store by mistake.
 */
import type { RecordedResponse } from './types.js';

const DROP_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-registry-auth',
  'x-amz-security-token',
]);
const SECRET_PARAMS =
  /^(?:token|access_token|refresh_token|id_token|password|passwd|secret|client_secret|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)$/i;
const SECRET_BODY_KEYS = new Set([
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'password',
  'secret',
  'identitytoken',
  'auth',
]);
const CREDENTIAL_IN_TEXT = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g;
export const REDACTED = '[redacted]';

export function redactUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return raw.replace(CREDENTIAL_IN_TEXT, `$1 ${REDACTED}`);
  }
  if (u.username || u.password) {
    u.username = '';
    u.password = '';
  }
  for (const key of [...u.searchParams.keys()]) {
    if (SECRET_PARAMS.test(key)) u.searchParams.set(key, REDACTED);
  }
  return u.toString();
}

function redactBody(body: string): string {
  const text = body.replace(CREDENTIAL_IN_TEXT, `$1 ${REDACTED}`);
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{')) return text;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return text;
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(parsed)) {
      if (SECRET_BODY_KEYS.has(k.toLowerCase())) {
        out[k] = REDACTED;
        changed = true;
      } else out[k] = v;
    }
    return changed ? JSON.stringify(out) : text;
  } catch {
    return text;
  }
}

export function redactResponse(r: RecordedResponse): RecordedResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(r.headers)) {
    const key = name.toLowerCase();
    if (DROP_HEADERS.has(key)) continue;
    headers[key] =
      key === 'link' || key === 'location'
        ? value.replace(/<([^>]*)>/g, (_, u: string) => `<${redactUrl(u)}>`)
        : value.replace(CREDENTIAL_IN_TEXT, `$1 ${REDACTED}`);
  }
  return {
    method: r.method,
    url: redactUrl(r.url),
    status: r.status,
    headers,
    body: redactBody(r.body),
    at: r.at,
    durationMs: r.durationMs,
  };
}

/** Redacts, then fits the responses of one scan into `maxBytes` of JSON: long bodies are cut first, then late responses dropped. */
export function sanitizeResponses(
  responses: readonly RecordedResponse[],
  maxBytes: number,
): { body: string; truncated: boolean } {
  let list = responses.map(redactResponse);
  let body = JSON.stringify(list);
  if (Buffer.byteLength(body) <= maxBytes) return { body, truncated: false };
  const cap = Math.max(256, Math.floor((maxBytes * 0.8) / list.length));
  list = list.map((r) => {
    const size = Buffer.byteLength(r.body);
    if (size <= cap) return r;
    const cut = Buffer.from(r.body).subarray(0, cap).toString('utf8');
    return { ...r, body: `${cut}…[truncated ${size - cap} bytes]` };
  });
  body = JSON.stringify(list);
  while (list.length > 1 && Buffer.byteLength(body) > maxBytes) {
    list = list.slice(0, Math.max(1, Math.floor(list.length / 2)));
    body = JSON.stringify(list);
  }
  return { body, truncated: true };
}
