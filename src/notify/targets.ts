/**
 * A Provider with its Secrets read, as Flux's `createNotifier` does: the Secret's `address`
 * replaces `spec.address`, its `token` signs (generic-hmac) or authorises (slack), its
 * `headers` (a YAML map) are added to generic requests, its `proxy` replaces `spec.proxy`;
 * `certSecretRef` gives `ca.crt` (and `tls.crt`/`tls.key` for a client certificate).
 */
import { providerHeaders, type Config, type Provider } from '../config/index.js';
import type { Target } from './payload.js';

export type Resolved = { ok: true; target: Target } | { ok: false; problem: string };

export function resolveTarget(config: Config, p: Provider): Resolved {
  const ns = p.metadata.namespace;
  const name = `${ns}/${p.metadata.name}`;
  const fail = (problem: string): Resolved => ({ ok: false, problem: `Provider ${name}: ${problem}` });
  let url = p.spec.address;
  let token: string | undefined;
  let proxy = p.spec.proxy;
  let headers: Record<string, string> = {};
  if (p.spec.secretRef) {
    const s = config.secrets.get(`${ns}/${p.spec.secretRef}`);
    if (!s) return fail(`Secret ${ns}/${p.spec.secretRef} not found`);
    const get = (k: string): string | undefined => s.data[k]?.toString('utf8').trim();
    url = get('address') || url;
    token = get('token') || undefined;
    proxy = get('proxy') || proxy;
    const h = s.data.headers?.toString('utf8');
    if (h !== undefined) {
      const parsed = providerHeaders(h);
      if (!parsed.ok) return fail(`Secret ${ns}/${p.spec.secretRef} key "headers": ${parsed.problem}`);
      headers = parsed.headers;
    }
  }
  if (!url) return fail('no address: set spec.address or an "address" key in its Secret');
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    // The address may come from a Secret: never quote it.
    return fail('the address is not an http(s) URL');
  }
  if (p.spec.type === 'generic-hmac' && !token)
    return fail(`a generic-hmac Provider needs a "token" key in its Secret`);
  const target: Target = {
    provider: name,
    type: p.spec.type,
    url,
    headers,
    timeoutMs: p.spec.timeout,
    ...(token ? { token } : {}),
    ...(p.spec.username ? { username: p.spec.username } : {}),
    ...(p.spec.channel ? { channel: p.spec.channel } : {}),
    ...(proxy ? { proxy } : {}),
  };
  if (p.spec.certSecretRef) {
    const c = config.secrets.get(`${ns}/${p.spec.certSecretRef}`);
    if (!c) return fail(`Secret ${ns}/${p.spec.certSecretRef} not found`);
    const ca = c.data['ca.crt'] ?? c.data.caFile;
    const cert = c.data['tls.crt'] ?? c.data.certFile;
    const key = c.data['tls.key'] ?? c.data.keyFile;
    if (ca) target.ca = ca;
    if (cert && key) {
      target.cert = cert;
      target.key = key;
    }
  }
  return { ok: true, target };
}
