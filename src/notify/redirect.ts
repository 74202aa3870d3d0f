/**
 * Redirects, as Flux's notification-controller's client (Go's net/http under retryablehttp)
 * follows them for a POST: 307 and 308 are followed with the same method and body, at most 10
 * hops. Go also turns a 301/302/303 into a GET without the body; a webhook that answers a POST
 * that way is not receiving it, so pawl does not follow those: they fail like any other 3xx.
 *
 * Credentials go only to the origin the Provider names, the registry client's rule
 * (src/scan/registry/transport.ts): on a hop to another origin `Authorization`, the
 * generic-hmac `X-Signature` (made with the token) and the Secret's `headers` (often an API
 * key) are dropped, and stay dropped.
 */
import type { OutgoingRequest, AlertSender, TransportResponse } from './transport.js';

export const MAX_REDIRECTS = 10;

const FOLLOWED = new Set([307, 308]);

/** A redirect that cannot be followed: not worth another attempt (retryablehttp agrees). */
export class RedirectError extends Error {
  override name = 'RedirectError';
}

/**
 * Sends `req`, following redirects. `credentials` are the header names (any case) that must
 * not leave the first origin.
 */
export async function postFollowing(
  transport: AlertSender,
  req: OutgoingRequest,
  credentials: readonly string[],
): Promise<TransportResponse> {
  const secret = new Set(credentials.map((h) => h.toLowerCase()));
  let url = new URL(req.url);
  let headers = req.headers;
  for (let hops = 0; ; hops++) {
    const res = await transport({ ...req, url: url.href, headers });
    if (!FOLLOWED.has(res.status) || res.location === undefined) return res;
    if (hops >= MAX_REDIRECTS) throw new RedirectError(`more than ${MAX_REDIRECTS} redirects`);
    let next: URL;
    try {
      next = new URL(res.location, url);
    } catch {
      throw new RedirectError(`redirected (${res.status}) to a Location that is not a URL`);
    }
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw new RedirectError(
        `redirected (${res.status}) to a ${next.protocol} URL; only http and https are followed`,
      );
    if (next.origin !== url.origin)
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !secret.has(k.toLowerCase())));
    url = next;
  }
}
