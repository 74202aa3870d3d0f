/**
 * What the registry says about one repository's images during a pass: HEADs (does a tag exist,
 * what digest), build times, first-seen times. Every answer is memoised for the pass, and build
 * times come from the store's digest cache first, so a steady-state pass asks the registry
 * nothing it has asked before. Digests learnt from the registry are kept for the pass to write
 * in one batch (`takeDigests`), not one store write per HEAD.
 */
import type { ImageRepository } from '../config/index.js';
import type { RegistryClient, RepositoryRef, ManifestHead, Platform } from '../scan/index.js';
import type { TagInfo } from '../records/index.js';
import type { Store, TagDigestWrite } from '../store/index.js';
import type { Comparator } from '../guard/index.js';
import { pool } from '../util/index.js';

/** The store as a repository's facts read it: tags' first-seen times and digests, build times. */
export type FactsStore = Pick<Store, 'tagInfo' | 'currentTagInfos' | 'buildTimeCache'>;

let made = 0;

/** How many ImageFacts this process has made: a pass asks about what changed, not every image (tests count them). */
export function factsMade(): number {
  return made;
}

export class ImageFacts {
  // The memo tables are made when first used: a daemon's pass makes the facts of every policy,
  // most are asked nothing, and four empty tables an image were ~0.5 KB each in every running
  // pass (issue 27).
  #heads: Map<string, Promise<ManifestHead>> | undefined;
  /** Build time by reference (tag or digest); null when the registry has none. */
  #times: Map<string, Date | null> | undefined;
  #infos: Map<string, Promise<TagInfo | null>> | undefined;
  private currentInfos: Promise<Map<string, TagInfo>> | null = null;
  #digests: Map<string, TagDigestWrite> | undefined;

  private get heads(): Map<string, Promise<ManifestHead>> {
    return (this.#heads ??= new Map());
  }

  private get times(): Map<string, Date | null> {
    return (this.#times ??= new Map());
  }

  private get infos(): Map<string, Promise<TagInfo | null>> {
    return (this.#infos ??= new Map());
  }

  private get digests(): Map<string, TagDigestWrite> {
    return (this.#digests ??= new Map());
  }

  #ref: RepositoryRef | undefined;
  #client: RegistryClient | undefined;

  /**
   * The reference and client are made when first asked for: a daemon's pass makes the facts of
   * every policy it takes from its cache (outcome-cache.ts), and most are never asked anything.
   */
  constructor(
    readonly repository: ImageRepository,
    readonly repoKey: string,
    private readonly clients: {
      reference(r: ImageRepository): RepositoryRef;
      client(r: ImageRepository): RegistryClient;
    },
    private readonly store: FactsStore,
  ) {
    made++;
  }

  get ref(): RepositoryRef {
    return (this.#ref ??= this.clients.reference(this.repository));
  }

  get client(): RegistryClient {
    return (this.#client ??= this.clients.client(this.repository));
  }

  head(reference: string): Promise<ManifestHead> {
    let h = this.heads.get(reference);
    if (!h) {
      h = this.client.headManifest(this.ref, reference);
      this.heads.set(reference, h);
      // A failed HEAD is not memoised: the next question asks again.
      h.catch(() => this.heads.delete(reference));
    }
    return h;
  }

  async exists(tag: string): Promise<boolean> {
    const h = await this.head(tag);
    if (h.exists && h.digest) this.learnDigest(tag, h.digest);
    return h.exists;
  }

  private learnDigest(tag: string, digest: string): void {
    this.digests.set(tag, { repository: this.repoKey, tag, digest, at: new Date() });
  }

  /** The digests learnt since the last call, for the pass's next batch write. */
  takeDigests(): TagDigestWrite[] {
    const out = this.#digests ? [...this.#digests.values()] : [];
    this.#digests = undefined;
    return out;
  }

  /** What the store knows about a tag (memoised for the pass). */
  tagInfo(tag: string): Promise<TagInfo | null> {
    let p = this.infos.get(tag);
    if (!p) {
      p = this.store.tagInfo(this.repoKey, tag);
      this.infos.set(tag, p);
      p.catch(() => this.infos.delete(tag));
    }
    return p;
  }

  /** The digest the store knows for a tag: from one read of the current list, else by itself. */
  private async knownDigest(tag: string): Promise<string | null | undefined> {
    if (!this.currentInfos) {
      const all = this.store.currentTagInfos(this.repoKey).then((l) => new Map(l.map((i) => [i.tag, i])));
      this.currentInfos = all;
      all.catch(() => (this.currentInfos = null));
    }
    const current = (await this.currentInfos).get(tag);
    return current ? current.digest : (await this.tagInfo(tag))?.digest;
  }

  /** One platform's image digest in the tag's index (`spec.digest.platform`); undefined when none. */
  async platformDigest(tag: string, platform: Platform): Promise<string | undefined> {
    return (await this.client.platformDigest(this.ref, tag, platform)) ?? undefined;
  }

  async digest(tag: string): Promise<string | undefined> {
    const h = await this.head(tag);
    return h.exists ? h.digest : undefined;
  }

  /** Loads build times for references not asked about yet (tags or `sha256:` digests). */
  async loadBuildTimes(references: Iterable<string>): Promise<void> {
    const cache = this.store.buildTimeCache();
    const todo: string[] = [];
    const asked = [...new Set(references)].filter((r) => !this.times.has(r));
    const cached = await Promise.all(
      asked.map(async (r) => {
        // A tag pawl has seen before with a known digest: its build time is cached by digest.
        const known = r.startsWith('sha256:') ? r : await this.knownDigest(r);
        return known ? cache.get(known).catch(() => undefined) : undefined;
      }),
    );
    asked.forEach((r, i) => {
      const c = cached[i];
      if (c !== undefined) this.times.set(r, c?.created ?? null);
      else todo.push(r);
    });
    await pool(todo, 8, async (r) => {
      try {
        const t = await this.client.buildTime(this.ref, r);
        if (t && !r.startsWith('sha256:')) this.learnDigest(r, t.digest);
        this.times.set(r, t?.created ?? null);
      } catch {
        // An image whose build time cannot be read (deleted, or the registry failed) is simply
        // not orderable by build time; the guard then keeps the value (`undecidable`).
        this.times.set(r, null);
      }
    });
  }

  /** Every build time loaded so far, for orders that read them (`newestBuild`). */
  knownBuildTimes(): Map<string, Date> {
    const out = new Map<string, Date>();
    for (const [r, d] of this.times) if (d) out.set(r, d);
    return out;
  }

  buildTime(reference: string): Date | null | undefined {
    return this.times.get(reference);
  }

  /** Build times of these tags, for the `newestBuild` strategy. */
  async buildTimesOf(tags: readonly string[]): Promise<Map<string, Date>> {
    await this.loadBuildTimes(tags);
    const out = new Map<string, Date>();
    for (const t of tags) {
      const d = this.times.get(t);
      if (d) out.set(t, d);
    }
    return out;
  }

  /**
   * A synchronous order over build times already loaded; references not loaded yet are
   * collected in `wanted` so the caller can load them and decide again.
   */
  buildTimeOrder(wanted: Set<string>): Comparator {
    return (a, b) => {
      const ta = this.times.get(a);
      const tb = this.times.get(b);
      if (ta === undefined) wanted.add(a);
      if (tb === undefined) wanted.add(b);
      if (!ta || !tb) return null;
      return Math.sign(ta.getTime() - tb.getTime());
    };
  }

  /** First-seen times of every tag in the current list, from one read (`guard.minimumAge`). */
  async currentFirstSeen(): Promise<Map<string, Date>> {
    const infos = await this.store.currentTagInfos(this.repoKey);
    return new Map(infos.map((i) => [i.tag, i.firstSeen]));
  }

  async firstSeen(tag: string): Promise<{ firstSeen: Date | null; initial: boolean }> {
    const info = await this.tagInfo(tag);
    return { firstSeen: info?.firstSeen ?? null, initial: info?.initial ?? false };
  }
}
