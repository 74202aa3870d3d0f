import { z } from 'zod';
import { metadata, tolerated } from './common.js';

/** Kubernetes' strict base64 (standard alphabet, padded). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Values are never quoted in messages: only key names appear.
 * YAML may read an unquoted value as a number or boolean; Kubernetes wants strings.
 */
const valueMap = (what: 'data' | 'stringData') =>
  z.record(z.string(), z.unknown()).superRefine((m, ctx) => {
    for (const [k, v] of Object.entries(m)) {
      if (typeof v !== 'string') {
        ctx.addIssue({
          code: 'custom',
          path: [k],
          message: `must be a string; quote the value${what === 'data' ? ' (base64)' : ''}`,
        });
      } else if (what === 'data' && !BASE64.test(v.replace(/\s+/g, ''))) {
        ctx.addIssue({
          code: 'custom',
          path: [k],
          message: 'is not valid base64; encode the value (e.g. `base64 -w0`) or move it to stringData',
        });
      }
    }
  });

const REQUIRED_KEYS: Record<string, { keys: string[]; any?: boolean }> = {
  'kubernetes.io/dockerconfigjson': { keys: ['.dockerconfigjson'] },
  'kubernetes.io/dockercfg': { keys: ['.dockercfg'] },
  'kubernetes.io/basic-auth': { keys: ['username', 'password'], any: true },
  'kubernetes.io/ssh-auth': { keys: ['ssh-privatekey'] },
  'kubernetes.io/tls': { keys: ['tls.crt', 'tls.key'] },
};

export const secretSchema = z
  .object({
    apiVersion: z.literal('v1'),
    kind: z.literal('Secret'),
    metadata,
    type: z.string().min(1).default('Opaque'),
    data: valueMap('data').default({}),
    stringData: valueMap('stringData').default({}),
    immutable: tolerated,
  })
  .transform((s, ctx) => {
    const data: Record<string, Buffer> = {};
    for (const [k, v] of Object.entries(s.data))
      data[k] = Buffer.from(String(v).replace(/\s+/g, ''), 'base64');
    for (const [k, v] of Object.entries(s.stringData)) data[k] = Buffer.from(String(v), 'utf8');
    const req = REQUIRED_KEYS[s.type];
    if (req) {
      const present = req.keys.filter((k) => k in data);
      const ok = req.any ? present.length > 0 : present.length === req.keys.length;
      if (!ok) {
        const missing = req.keys.filter((k) => !(k in data));
        ctx.issues.push({
          code: 'custom',
          path: ['type'],
          input: s.type,
          message: `a Secret of type ${s.type} needs ${req.any ? 'one of ' : ''}${(req.any ? req.keys : missing).join(req.any ? ', ' : ' and ')} in data or stringData`,
        });
        return z.NEVER;
      }
    }
    if (s.type === 'kubernetes.io/dockerconfigjson') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(data['.dockerconfigjson']!.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      if (
        typeof parsed !== 'object' ||
        parsed === null ||
        typeof (parsed as { auths?: unknown }).auths !== 'object'
      ) {
        ctx.issues.push({
          code: 'custom',
          path: ['.dockerconfigjson' in s.stringData ? 'stringData' : 'data', '.dockerconfigjson'],
          input: undefined,
          message:
            'is not a Docker config (JSON with an "auths" object); create it with `kubectl create secret docker-registry`',
        });
        return z.NEVER;
      }
    }
    return { apiVersion: s.apiVersion, kind: s.kind, metadata: s.metadata, type: s.type, data };
  });
