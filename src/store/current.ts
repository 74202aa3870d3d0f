/**
 * Current tags, read once per list (`Store.currentTagsOf`). A repository's current tags are the
 * rows of its latest good scan's list scan (docs/store.md), and those rows are settled: a list
 * scan's rows are written in the transaction that finishes it, and only a later list scan of
 * the image moves them away — which makes a new latest list. So a process keeps each
 * repository's current list by (image, list scan, checksum) and reads the rows again only when
 * that changes: a daemon's automations each ask for every policy's tags, and at 100 × 5,000 tags
 * reading them all per automation was 18 % of its CPU (docs/performance.md, "Issue 27: scale").
 * The checksum is in the key because SQLite reuses the ids of a rolled-back group.
 */
import { sortTags } from './tags.js';
import { sharedNameKey } from '../util/index.js';

/** Where a repository's current tags are: its latest good scan's image, list scan and checksum. */
export interface CurrentList {
  repository: string;
  image: string;
  list: number;
  checksum: string | null;
}

export interface CurrentReads {
  /** The current list of each repository that has a good scan (one query for all). */
  lists(repositories: readonly string[]): Promise<CurrentList[]>;
  /** The tags of each list, by repository, in any order. */
  tags(lists: readonly CurrentList[]): Promise<Map<string, string[]>>;
}

/** A repository's kept list: where it was read from, and its tags in code-unit order. */
interface Kept {
  image: string;
  list: number;
  checksum: string | null;
  tags: Packed;
}

/**
 * Tags kept as one string, a line each, when none holds a line break (a registry's tags never
 * do): an array and a string a tag was ~370 bytes a repository of ten tags, one string ~80, and a
 * daemon at 10,000 images keeps every repository's (issue 27). Unpacked at each read into the
 * caller's own array.
 */
type Packed = string | readonly string[];

const pack = (tags: readonly string[]): Packed =>
  tags.length > 0 && !tags.some((t) => t.includes('\n')) ? tags.join('\n') : tags;

const unpack = (tags: Packed): string[] => (typeof tags === 'string' ? tags.split('\n') : tags.slice());

// The fields compared one by one, not joined into a key: the joined string, a concatenation of
// four, was ~280 bytes a repository (issue 27).
const same = (k: Kept | undefined, l: CurrentList): boolean =>
  k !== undefined && k.list === l.list && k.checksum === l.checksum && k.image === l.image;

export class CurrentTagsCache {
  readonly #byRepo = new Map<string, Kept>();
  constructor(private readonly reads: CurrentReads) {}

  async of(repositories: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(repositories.map((r) => [r, []]));
    if (repositories.length === 0) return out;
    const lists = await this.reads.lists(repositories);
    const stale = lists.filter((l) => !same(this.#byRepo.get(l.repository), l));
    const read = stale.length > 0 ? await this.reads.tags(stale) : new Map<string, string[]>();
    for (const l of stale) {
      const tags = read.get(l.repository) ?? [];
      // Code-unit order, as the checksum defines it: not the database's collation.
      const { image, list, checksum } = l;
      // Under the one copy of the name (the row's is the database's own).
      this.#byRepo.set(sharedNameKey(l.repository), { image, list, checksum, tags: pack(sortTags(tags)) });
    }
    // A copy each: callers own what they are given.
    for (const l of lists) out.set(l.repository, unpack(this.#byRepo.get(l.repository)!.tags));
    return out;
  }
}
