/**
 * A second line of defence before recorded registry responses are written to disk: the client
 * already redacts, but nothing that can carry a credential may reach the store by mistake.
 */
import { SECRET_HEADERS, isSealedExchange, redactExchange, redactUrl } from '../util/index.js';
import type { RecordedResponse } from '../records/index.js';

/**
 * A recorded response without credentials: credential headers are left out, not masked. The
 * headers and body of one the registry client redacted and sealed are not redacted by shape
 * again (they would come back the same; a warm 500-repository pass spent ~25 ms doing it): its
 * masked credential headers are only left out. Its URL is, as a masked query can read as a path.
 */
export function redactResponse(r: RecordedResponse): RecordedResponse {
  if (!isSealedExchange(r)) return redactExchange(r, { drop: true });
  const headers: Record<string, string> = {};
  for (const k of Object.keys(r.headers)) if (!SECRET_HEADERS.has(k)) headers[k] = r.headers[k]!;
  return { ...r, url: redactUrl(r.url), headers };
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
