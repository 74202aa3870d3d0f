/**
 * Fingerprints of the Secrets each ImageRepository uses (issue 23, item 6): after a person fixes a
 * registry password, the next run must not repeat the old 401 from the stored scan until the
 * interval is up. A repository whose Secrets changed since its last scan is scanned now. The
 * prints are kept in the state directory beside the store (`secret-prints.json`: repository to
 * sha256 of its Secrets' keys and values); nothing of the values themselves is written.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { refKey, type Config, type ImageRepository } from '../config/index.js';

const FILE = 'secret-prints.json';

/** sha256 of the repository's secretRef and certSecretRef Secrets (names, keys, values); '' without any. */
export function secretPrint(config: Config, repo: ImageRepository): string {
  const ns = repo.metadata.namespace;
  const names = [repo.spec.secretRef, repo.spec.certSecretRef].filter(
    (n): n is string => typeof n === 'string',
  );
  if (names.length === 0) return '';
  const h = createHash('sha256');
  for (const name of names) {
    h.update(`${ns}/${name}\0`);
    const data = config.secrets.get(`${ns}/${name}`)?.data ?? {};
    for (const key of Object.keys(data).sort()) h.update(key).update('\0').update(data[key]!).update('\0');
  }
  return h.digest('hex');
}

/** Whether the repository's Secrets changed since `prints` recorded a print of them. */
export function secretChanged(
  prints: ReadonlyMap<string, string>,
  config: Config,
  repo: ImageRepository,
): boolean {
  const was = prints.get(refKey(repo.metadata));
  return was !== undefined && was !== secretPrint(config, repo);
}

/** Which version of the file the prints held are: another process may write it too. */
type Stamp = string;
const stampOf = (s: { ino: number; size: number; mtimeMs: number }): Stamp =>
  `${s.ino}:${s.size}:${s.mtimeMs}`;

/**
 * The prints as a process holds them. A daemon keeps one for all its passes (issue 27): each of
 * ten passes over 10,000 repositories read and parsed the whole file, and passes running at once
 * wrote it through the same temporary file, so one could rename the other's half-written text into
 * place and the next read found no prints at all. Here the file is read again only when another
 * process changed it, and written one version at a time, only when a print changed. A write that
 * fails leaves the prints recorded in this process only (the next change writes them all).
 */
export class SecretPrints {
  readonly #file: string;
  #prints: ReadonlyMap<string, string> = new Map();
  /** The file's version the prints were read from or last written as; null: none read yet. */
  #stamp: Stamp | null = null;
  /** Reads and records, one after another: each sees what the one before it recorded. */
  #queue: Promise<unknown> = Promise.resolve();
  #written = 0;

  /** `io.rename`: how a written version is put in place (tests delay one). */
  constructor(
    private readonly stateDir: string,
    private readonly io: { rename: (from: string, to: string) => Promise<void> } = { rename },
  ) {
    this.#file = join(stateDir, FILE);
  }

  /** The prints as recorded: read from the file when it is not the version held. */
  read(): Promise<ReadonlyMap<string, string>> {
    return this.#serial(() => this.#fresh());
  }

  /** Records the prints of the repositories just scanned; the others keep theirs. */
  record(scanned: readonly ImageRepository[], config: Config): Promise<void> {
    return this.#serial(async () => {
      const before = await this.#fresh();
      let next: Map<string, string> | null = null;
      for (const r of scanned) {
        const key = refKey(r.metadata);
        const print = secretPrint(config, r);
        if ((next ?? before).get(key) === print) continue;
        // A new map: a pass holding the one it read keeps what it read.
        next ??= new Map(before);
        next.set(key, print);
      }
      if (next === null) return;
      this.#prints = next;
      await this.#write(next);
    });
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const done = this.#queue.then(fn);
    this.#queue = done.catch(() => undefined);
    return done;
  }

  async #fresh(): Promise<ReadonlyMap<string, string>> {
    const now = await stat(this.#file).then(stampOf, () => 'absent');
    if (now !== this.#stamp) {
      // No file (a state directory before its first write): no prints, and nothing to read.
      this.#prints = now === 'absent' ? new Map() : await readPrintsFile(this.#file);
      this.#stamp = now;
    }
    return this.#prints;
  }

  /** `prints` as the file's next version: a temporary file of this process's own, renamed onto it. */
  async #write(prints: ReadonlyMap<string, string>): Promise<void> {
    await mkdir(this.stateDir, { recursive: true });
    const tmp = `${this.#file}.${process.pid}.${++this.#written}.tmp`;
    const text = JSON.stringify(Object.fromEntries(prints), null, 1) + '\n';
    const fh = await open(tmp, 'w', 0o600);
    try {
      let stamp: Stamp;
      try {
        await fh.writeFile(text);
        stamp = stampOf(await fh.stat());
      } finally {
        await fh.close();
      }
      await this.io.rename(tmp, this.#file);
      this.#stamp = stamp;
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }
}

async function readPrintsFile(file: string): Promise<Map<string, string>> {
  const text = await readFile(file, 'utf8').catch(() => '{}');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return new Map();
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return new Map();
  return new Map(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}
