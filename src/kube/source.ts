/**
 * Configuration from a Kubernetes API server: list and watch of pawl's kinds (Flux's image
 * kinds and pawl's own `image.pawl.dev`), the GitRepositories, Secrets and, when asked, the
 * notification objects they use; turned into the same `Config` the file loader builds, through
 * the same loader (config/loadObjects). Each watch resumes from its last resourceVersion (and
 * bookmarks), relists when the server answers 410 Gone, and starts again after a broken
 * connection (a restarted API server) with a backoff. The consumer is told, debounced, with the
 * whole new Config each time something changed.
 */
import { loadObjects, type LoadResult } from '../config/index.js';
import { errorMessage, type Logger } from '../util/index.js';
import {
  KubeApiError,
  ResourceExpiredError,
  type KubeClient,
  type KubeObject,
  type Resource,
} from './client.js';

/** For each kind, the versions pawl reads, in order of preference: the first one served is used. */
const IMAGE_GROUP_VERSIONS: readonly (readonly [string, string])[] = [
  ['image.toolkit.fluxcd.io', 'v1'],
  ['image.toolkit.fluxcd.io', 'v1beta2'],
];
const PAWL_GROUP: readonly [string, string] = ['image.pawl.dev', 'v1alpha1'];

interface Watched {
  /** Candidates of one group, one of which is used; or a single resource. */
  candidates: Resource[];
  /** Flux's `--watch-label-selector` applies to the image kinds only. */
  selected: boolean;
  fieldSelector?: string;
  /**
   * Read when the server serves it and pawl may list it; else left out with a warning (the
   * notification kinds: a cluster without notification-controller's CRDs, or RBAC without them).
   */
  optional?: boolean;
}

function imageKind(kind: string, plural: string): Watched[] {
  return [
    {
      candidates: IMAGE_GROUP_VERSIONS.map(([group, version]) => ({ group, version, plural, kind })),
      selected: true,
    },
    { candidates: [{ group: PAWL_GROUP[0], version: PAWL_GROUP[1], plural, kind }], selected: true },
  ];
}

export function watchedKinds(notifications: boolean): Watched[] {
  const out: Watched[] = [
    ...imageKind('ImageRepository', 'imagerepositories'),
    ...imageKind('ImagePolicy', 'imagepolicies'),
    ...imageKind('ImageUpdateAutomation', 'imageupdateautomations'),
    {
      candidates: ['v1', 'v1beta2'].map((version) => ({
        group: 'source.toolkit.fluxcd.io',
        version,
        plural: 'gitrepositories',
        kind: 'GitRepository',
      })),
      selected: false,
    },
    // Helm keeps every release in a Secret: large, many, and never pawl's.
    {
      candidates: [{ group: '', version: 'v1', plural: 'secrets', kind: 'Secret' }],
      selected: false,
      fieldSelector: 'type!=helm.sh/release.v1',
    },
  ];
  // Receivers stay notification-controller's: in a cluster they annotate the image objects
  // (reconcile.fluxcd.io/requestedAt), which pawl handles.
  if (notifications) {
    for (const [plural, kind, versions] of [
      ['providers', 'Provider', ['v1beta3', 'v1beta2']],
      ['alerts', 'Alert', ['v1beta3', 'v1beta2']],
    ] as const) {
      out.push({
        candidates: versions.map((version) => ({
          group: 'notification.toolkit.fluxcd.io',
          version,
          plural,
          kind,
        })),
        selected: false,
        optional: true,
      });
    }
  }
  return out;
}

export interface KubeSourceOptions {
  client: KubeClient;
  /** One namespace (`--watch-namespace`); all when absent. */
  namespace?: string;
  /** Flux's `--watch-label-selector`, for the image kinds. */
  labelSelector?: string;
  /** Also watch Provider and Alert, when the server has them (pawl sends the alerts itself). */
  notifications?: boolean;
  /** How long to wait after a change for more before telling the consumer; default 200 ms. */
  debounceMs?: number;
  /** Waits between attempts after a failed watch; injected for tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  log?: Logger;
  /** Told of each relist (410 Gone or a first list), for metrics and tests. */
  onRelist?: (resource: Resource, why: 'initial' | 'expired') => void;
  /** Told of each watch that failed and will be tried again. */
  onWatchError?: (resource: Resource, err: unknown) => void;
}

export type ConfigListener = (result: LoadResult) => void;

const key = (o: KubeObject): string => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

export class KubeSource {
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly abort = new AbortController();
  private readonly listeners = new Set<ConfigListener>();
  private readonly loops: Promise<void>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private latest: LoadResult | undefined;
  private building: Promise<void> = Promise.resolve();
  private readonly sleep: NonNullable<KubeSourceOptions['sleep']>;

  constructor(private readonly opts: KubeSourceOptions) {
    this.sleep = opts.sleep ?? defaultSleep;
  }

  /** The resources being watched (after discovery), as `group/version/plural`. */
  resources: Resource[] = [];

  /**
   * Finds which versions the server serves, lists each, and returns the first Config; then
   * watches until `stop()`. Throws when the server cannot be reached at all.
   */
  async start(): Promise<LoadResult> {
    const { client } = this.opts;
    for (const w of watchedKinds(this.opts.notifications ?? false)) {
      for (const r of w.candidates) {
        if (await served(client, r, w.optional === true, this.opts.log)) {
          this.resources.push(r);
          const list = this.listOptions(w);
          const first = await client.list(r, list);
          this.replace(r, first.items);
          this.opts.onRelist?.(r, 'initial');
          this.loops.push(this.watchLoop(r, list, first.resourceVersion));
          break;
        }
      }
    }
    await this.rebuild();
    return this.latest!;
  }

  /** The Config of the objects as last seen. */
  current(): LoadResult | undefined {
    return this.latest;
  }

  /**
   * The objects of `kind` named `namespace/name` as the server has them, in each group that
   * holds one (both, for a conflict): what status is written to.
   */
  lookup(kind: string, namespace: string, name: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const r of this.resources) {
      if (r.kind !== kind) continue;
      const o = this.objects.get(`${r.group}/${r.version}/${r.plural}`)?.get(`${namespace}/${name}`);
      if (o) out.push(o);
    }
    return out;
  }

  /** Called with each new Config after a change, debounced; returns how to stop listening. */
  onChange(fn: ConfigListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    clearTimeout(this.timer);
    await Promise.allSettled(this.loops);
  }

  private listOptions(w: Watched): { namespace?: string; labelSelector?: string; fieldSelector?: string } {
    return {
      ...(this.opts.namespace ? { namespace: this.opts.namespace } : {}),
      ...(w.selected && this.opts.labelSelector ? { labelSelector: this.opts.labelSelector } : {}),
      ...(w.fieldSelector ? { fieldSelector: w.fieldSelector } : {}),
    };
  }

  private bucket(r: Resource): Map<string, KubeObject> {
    const id = `${r.group}/${r.version}/${r.plural}`;
    let m = this.objects.get(id);
    if (!m) this.objects.set(id, (m = new Map()));
    return m;
  }

  private replace(r: Resource, items: readonly KubeObject[]): void {
    const m = this.bucket(r);
    m.clear();
    for (const o of items) m.set(key(o), o);
  }

  private async watchLoop(
    r: Resource,
    list: { namespace?: string; labelSelector?: string; fieldSelector?: string },
    from: string,
  ): Promise<void> {
    const { client, log } = this.opts;
    const signal = this.abort.signal;
    let rv: string | undefined = from;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (rv === undefined) {
          const again = await client.list(r, list);
          this.replace(r, again.items);
          rv = again.resourceVersion;
          this.opts.onRelist?.(r, 'expired');
          this.changed();
        }
        for await (const ev of client.watch(r, { ...list, resourceVersion: rv, signal })) {
          failures = 0;
          if (ev.type === 'BOOKMARK') {
            rv = ev.resourceVersion;
            continue;
          }
          const m = this.bucket(r);
          const before = m.get(key(ev.object));
          if (ev.type === 'DELETED') m.delete(key(ev.object));
          else m.set(key(ev.object), ev.object);
          rv = ev.object.metadata.resourceVersion ?? rv;
          // pawl's own status writes come back as changes: they change nothing pawl reads, and
          // rebuilding the whole Config for each would make every write cost a reload.
          if (ev.type === 'MODIFIED' && before && sameInput(before, ev.object)) continue;
          this.changed();
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ResourceExpiredError) {
          log?.info(`${r.plural}: resourceVersion ${rv} is gone; listing again`);
          rv = undefined;
          continue;
        }
        failures++;
        this.opts.onWatchError?.(r, err);
        log?.warn(`watching ${r.plural}.${r.group || 'core'} failed (${errorMessage(err)}); trying again`);
        await this.sleep(Math.min(30_000, 250 * 2 ** Math.min(failures, 7)), signal);
      }
    }
  }

  private changed(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.building = this.building.then(() => this.rebuild().then(() => this.notify()));
    }, this.opts.debounceMs ?? 200);
  }

  private notify(): void {
    if (this.abort.signal.aborted || !this.latest) return;
    for (const fn of this.listeners) fn(this.latest);
  }

  private async rebuild(): Promise<void> {
    const all: KubeObject[] = [];
    const secrets: KubeObject[] = [];
    for (const [id, m] of this.objects) (id === '/v1/secrets' ? secrets : all).push(...m.values());
    const wanted = referencedSecrets(all);
    const used = secrets.filter((s) => wanted.has(key(s)));
    this.latest = await loadObjects([...all, ...used].map(withoutServerFields));
  }
}

/** Whether the server serves this group and version (a CRD of it is installed). */
async function served(client: KubeClient, r: Resource, optional: boolean, log?: Logger): Promise<boolean> {
  try {
    await client.list(r, { limit: 1 });
    return true;
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return false;
    if (optional && err instanceof KubeApiError && err.status === 403) {
      log?.warn(
        `cannot list ${r.plural}.${r.group} (${errorMessage(err)}); pawl sends no alerts of them: ` +
          'grant get, list and watch on them (deploy/kubernetes/overlays/kubernetes-mode/rbac.yaml)',
      );
      return false;
    }
    throw err;
  }
}

/** `ns/name` of each Secret an object names, under any `…secretRef`/`…SecretRef` key. */
export function referencedSecrets(objects: readonly KubeObject[]): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown, ns: string): void => {
    if (v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) return v.forEach((x) => walk(x, ns));
    for (const [k, x] of Object.entries(v)) {
      if (
        /secretRef$/i.test(k) &&
        x !== null &&
        typeof x === 'object' &&
        typeof (x as { name?: unknown }).name === 'string'
      ) {
        const ref = x as { name: string; namespace?: unknown };
        out.add(`${typeof ref.namespace === 'string' ? ref.namespace : ns}/${ref.name}`);
      } else walk(x, ns);
    }
  };
  for (const o of objects) walk((o as { spec?: unknown }).spec, o.metadata.namespace ?? 'default');
  return out;
}

/** Whether two versions of an object differ only in what the server and status writers change. */
function sameInput(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject): string => {
    const { status: _s, ...rest } = withoutServerFields(o) as KubeObject & { status?: unknown };
    void _s;
    const { resourceVersion: _rv, ...metadata } = rest.metadata;
    void _rv;
    return JSON.stringify({ ...rest, metadata });
  };
  return strip(a) === strip(b);
}

/**
 * The object as its author wrote it, for the loader: managedFields and the like are the server's,
 * and the loader would warn about them as unknown fields.
 */
function withoutServerFields(o: KubeObject): KubeObject {
  const { managedFields: _m, ...metadata } = o.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  void _m;
  return { ...o, metadata };
}
