/**
 * A small Kubernetes API client on undici, for exactly what pawl does with the API server:
 * list, watch (one JSON event a line), get, a merge patch of the status subresource, and
 * creating Events. `@kubernetes/client-node` was not used: 2.x needs undici 8 (Node ≥ 22.19),
 * and 1.x brings node-fetch and a dependency on @types/node 24 (docs/kubernetes.md).
 */
import { setTimeout as setTimeoutPromise } from 'node:timers/promises';
import { z } from 'zod';
import type { Dispatcher } from 'undici';
import type { KubeConnection } from './kubeconfig.js';

/** One kind of object, by where the API serves it. */
export interface Resource {
  /** `''` for the core group (Secrets, Events). */
  group: string;
  version: string;
  /** The lower-case plural of the URL: `imagepolicies`. */
  plural: string;
  kind: string;
}

type Undici = typeof import('undici');

// Loaded when first used: most of pawl's commands never talk to an API server. Bundled, a dynamic
// import of this CommonJS package yields its exports under `default` only.
const loadUndici = (() => {
  let undici: Promise<Undici> | undefined;
  return (): Promise<Undici> =>
    (undici ??= import('undici').then((m) => ('default' in m && m.default ? m.default : m) as Undici));
})();

export const apiVersionOf = (r: Resource): string => (r.group ? `${r.group}/${r.version}` : r.version);

/** An answer of the API server other than 2xx, with its Status message when it sent one. */
export class KubeApiError extends Error {
  override name = 'KubeApiError';
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** The watch was asked to resume from a resourceVersion the server no longer has (410). */
export class ResourceExpiredError extends KubeApiError {
  override name = 'ResourceExpiredError';
}

const statusSchema = z.object({
  kind: z.literal('Status'),
  code: z.number().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
});

const metaSchema = z.looseObject({
  name: z.string(),
  namespace: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().optional(),
  uid: z.string().optional(),
});

export const kubeObjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: metaSchema,
});
export type KubeObject = z.infer<typeof kubeObjectSchema>;

const listSchema = z.object({
  metadata: z.looseObject({ resourceVersion: z.string(), continue: z.string().optional() }),
  items: z.array(kubeObjectSchema),
});

const bookmarkSchema = z.looseObject({ resourceVersion: z.string().optional() });

const watchEventSchema = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']),
  object: z.looseObject({}),
});

export type WatchEvent =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubeObject }
  | { type: 'BOOKMARK'; resourceVersion: string };

export interface ListOptions {
  /** One namespace; all when absent. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Stop after this many (one page); default: every object. */
  limit?: number;
}

export interface WatchOptions extends ListOptions {
  resourceVersion: string;
  signal?: AbortSignal;
  /** How long the server keeps the watch open before it ends it; default 300 s. */
  timeoutSeconds?: number;
}

const MAX_429_ATTEMPTS = 10;

export class KubeClient {
  private agent?: Dispatcher;

  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  /** `sleep` waits between attempts after a 429 (injected for tests). */
  constructor(
    readonly conn: KubeConnection,
    opts: { sleep?: (ms: number, signal?: AbortSignal) => Promise<void> } = {},
  ) {
    this.sleep = opts.sleep ?? ((ms, signal) => setTimeoutPromise(ms, undefined, signal ? { signal } : {}));
  }

  private async dispatcher(): Promise<Dispatcher> {
    if (this.agent) return this.agent;
    const { Agent } = await loadUndici();
    this.agent = new Agent({
      connect: {
        ...(this.conn.ca ? { ca: this.conn.ca } : {}),
        ...(this.conn.cert ? { cert: this.conn.cert } : {}),
        ...(this.conn.key ? { key: this.conn.key } : {}),
        rejectUnauthorized: !this.conn.insecureSkipTlsVerify,
      },
    });
    return this.agent;
  }

  async close(): Promise<void> {
    await this.agent?.close();
    this.agent = undefined;
  }

  private path(r: Resource, namespace?: string, name?: string, sub?: string): string {
    const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
    const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    const n = name ? `/${encodeURIComponent(name)}` : '';
    return `${base}${ns}/${r.plural}${n}${sub ? `/${sub}` : ''}`;
  }

  private async send(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT',
    path: string,
    opts: {
      query?: Record<string, string>;
      body?: unknown;
      contentType?: string;
      signal?: AbortSignal;
      stream?: boolean;
    } = {},
  ): Promise<Dispatcher.ResponseData> {
    const url = new URL(this.conn.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = { accept: 'application/json' };
    const token = this.conn.token?.();
    if (token) headers.authorization = `Bearer ${token}`;
    if (opts.body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
    const { request } = await loadUndici();
    for (let attempt = 1; ; attempt++) {
      const res = await request(url, {
        method,
        headers,
        dispatcher: await this.dispatcher(),
        ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
        // A watch is quiet for minutes between changes; the server ends it (timeoutSeconds).
        ...(opts.stream ? { bodyTimeout: 0 } : {}),
      });
      if (res.statusCode >= 200 && res.statusCode < 300) return res;
      const text = await res.body.text();
      // 429 is the server asking to come back (priority and fairness, or a CRD's storage still
      // initialising just after it was established): client-go waits Retry-After and tries
      // again, up to 10 times; so does pawl.
      if (res.statusCode === 429 && attempt < MAX_429_ATTEMPTS) {
        const after = Number(res.headers['retry-after']);
        await this.sleep(Math.min(10, Number.isFinite(after) && after > 0 ? after : 1) * 1000, opts.signal);
        continue;
      }
      throw apiError(res.statusCode, text, `${method} ${path}`);
    }
  }

  private async json(res: Dispatcher.ResponseData): Promise<unknown> {
    return JSON.parse(await res.body.text()) as unknown;
  }

  /** Every object (following `continue`), and the resourceVersion to watch from. */
  async list(r: Resource, opts: ListOptions = {}): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const query: Record<string, string> = { limit: String(opts.limit ?? 500), ...selectors(opts) };
      if (cont) query.continue = cont;
      const body = listSchema.parse(
        await this.json(await this.send('GET', this.path(r, opts.namespace), { query })),
      );
      for (const item of body.items) items.push({ ...item, apiVersion: apiVersionOf(r), kind: r.kind });
      resourceVersion = body.metadata.resourceVersion;
      cont = opts.limit === undefined ? body.metadata.continue || undefined : undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  async get(r: Resource, namespace: string, name: string): Promise<KubeObject> {
    return kubeObjectSchema.parse(await this.json(await this.send('GET', this.path(r, namespace, name))));
  }

  /**
   * A merge patch of `/status` only (the API server ignores `spec` there). With
   * `resourceVersion` the server refuses it (409) when the object changed since.
   */
  async patchStatus(
    r: Resource,
    namespace: string,
    name: string,
    status: unknown,
    resourceVersion?: string,
  ): Promise<KubeObject> {
    const body = { ...(resourceVersion ? { metadata: { resourceVersion } } : {}), status };
    const res = await this.send('PATCH', this.path(r, namespace, name, 'status'), {
      body,
      contentType: 'application/merge-patch+json',
      query: { fieldManager: 'pawl' },
    });
    return kubeObjectSchema.parse(await this.json(res));
  }

  /** A whole-object update (PUT); the object's resourceVersion makes it refused (409) when stale. */
  async replace(r: Resource, namespace: string, name: string, object: unknown): Promise<KubeObject> {
    const res = await this.send('PUT', this.path(r, namespace, name), {
      body: object,
      query: { fieldManager: 'pawl' },
    });
    return kubeObjectSchema.parse(await this.json(res));
  }

  async create(r: Resource, namespace: string, object: unknown): Promise<KubeObject> {
    const res = await this.send('POST', this.path(r, namespace), { body: object });
    return kubeObjectSchema.parse(await this.json(res));
  }

  /**
   * The changes after `resourceVersion`, as they come, until the server ends the watch, the
   * signal aborts, or the connection breaks (an error). Throws ResourceExpiredError when the
   * version is too old (relist).
   */
  async *watch(r: Resource, opts: WatchOptions): AsyncGenerator<WatchEvent> {
    const query: Record<string, string> = {
      watch: '1',
      allowWatchBookmarks: 'true',
      resourceVersion: opts.resourceVersion,
      timeoutSeconds: String(opts.timeoutSeconds ?? 300),
      ...selectors(opts),
    };
    const res = await this.send('GET', this.path(r, opts.namespace), {
      query,
      stream: true,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    let buffered = '';
    res.body.setEncoding('utf8');
    for await (const chunk of res.body as AsyncIterable<string>) {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line === '') continue;
        const event = watchEventSchema.parse(JSON.parse(line));
        if (event.type === 'ERROR') {
          const s = statusSchema.safeParse(event.object);
          const code = s.success ? (s.data.code ?? 500) : 500;
          throw apiError(code, line, `watch ${this.path(r, opts.namespace)}`, s.success ? s.data : undefined);
        }
        if (event.type === 'BOOKMARK') {
          // A bookmark's object carries only a resourceVersion (and annotations), no name.
          const meta = bookmarkSchema.parse(event.object.metadata ?? {});
          yield { type: 'BOOKMARK', resourceVersion: meta.resourceVersion ?? opts.resourceVersion };
          continue;
        }
        const object = kubeObjectSchema.parse(event.object);
        yield { type: event.type, object: { ...object, apiVersion: apiVersionOf(r), kind: r.kind } };
      }
    }
  }
}

function selectors(opts: ListOptions): Record<string, string> {
  return {
    ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
    ...(opts.fieldSelector ? { fieldSelector: opts.fieldSelector } : {}),
  };
}

function apiError(
  status: number,
  text: string,
  what: string,
  known?: z.infer<typeof statusSchema>,
): KubeApiError {
  let s = known;
  if (!s) {
    try {
      const parsed = statusSchema.safeParse(JSON.parse(text));
      if (parsed.success) s = parsed.data;
    } catch {
      // Not JSON (a proxy's page): the status code says enough.
    }
  }
  const reason = s?.reason ?? '';
  const message = `${what}: ${status}${s?.message ? ` ${s.message}` : ''}`;
  return status === 410 || reason === 'Expired' || reason === 'Gone'
    ? new ResourceExpiredError(410, reason, message)
    : new KubeApiError(status, reason, message);
}
