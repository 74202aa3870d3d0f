/**
 * `pawl notify test`: one event straight to one Provider (no Alert, no rate limit, one attempt),
 * so a person can check an address, a token or a CA before relying on them.
 */
import { hostname } from 'node:os';
import type { Config } from '../config/index.js';
import { errorMessage } from '../util/index.js';
import { goTime, type FluxEvent } from './event.js';
import { credentialHeaders, payloadFor, rejectsBody } from './payload.js';
import { postFollowing } from './redirect.js';
import { resolveTarget } from './targets.js';
import { httpTransport, type AlertSender } from './transport.js';

export interface ProbeResult {
  ok: boolean;
  /** The HTTP status, when there was an answer. */
  status: number | null;
  /** Why it failed (the address and token masked). */
  error: string | null;
}

export async function testProvider(
  config: Config,
  key: string,
  opts: { transport?: AlertSender; now?: () => Date; reportingInstance?: string } = {},
): Promise<ProbeResult> {
  const p = config.providers.get(key);
  if (!p) return { ok: false, status: null, error: `Provider ${key} not found` };
  const r = resolveTarget(config, p);
  if (!r.ok) return { ok: false, status: null, error: r.problem };
  const t = r.target;
  const event: FluxEvent = {
    involvedObject: {
      kind: 'Provider',
      namespace: p.metadata.namespace,
      name: p.metadata.name,
      apiVersion: p.apiVersion,
    },
    severity: 'info',
    timestamp: goTime((opts.now ?? (() => new Date()))()),
    message: `pawl notify test: Provider ${key} receives pawl's events.`,
    reason: 'NotificationTest',
    reportingController: 'pawl',
    reportingInstance: opts.reportingInstance ?? hostname(),
  };
  const payload = payloadFor(t, event);
  const mask = (m: string): string => {
    let out = m.split(payload.url).join('<address>');
    if (t.token) out = out.split(t.token).join('*****');
    return out;
  };
  try {
    const res = await postFollowing(
      opts.transport ?? httpTransport,
      {
        url: payload.url,
        headers: payload.headers,
        body: payload.body,
        timeoutMs: t.timeoutMs,
        ...(t.proxy ? { proxy: t.proxy } : {}),
        ...(t.ca ? { ca: t.ca } : {}),
        ...(t.cert && t.key ? { cert: t.cert, key: t.key } : {}),
      },
      credentialHeaders(t),
    );
    const ok2xx = res.status >= 200 && res.status < 300;
    const rejected = ok2xx ? rejectsBody(t, res.body) : null;
    if (ok2xx && rejected === null) return { ok: true, status: res.status, error: null };
    return {
      ok: false,
      status: res.status,
      error: mask(rejected ?? `request failed with status code ${res.status}: ${res.body.slice(0, 200)}`),
    };
  } catch (err) {
    return { ok: false, status: null, error: mask(errorMessage(err)) };
  }
}
