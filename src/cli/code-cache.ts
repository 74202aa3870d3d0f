/**
 * The built CLI's V8 code cache (docs/performance.md, "The build"; docs/operations.md). Node 20
 * has no module compile cache (`module.enableCompileCache` is Node 22), so the launcher compiles
 * the CommonJS bundle itself through `vm.Script`, handing V8 the code a previous run of the same
 * command compiled: V8 deserialises it instead of parsing and compiling the bundle's functions
 * again. The cache is made after the command's work (`createCachedData()` then holds every
 * function the command ran, not only the bundle's top level), one file per command, so
 * `pawl validate` deserialises only what validate runs.
 *
 * Never fatal: a missing, unreadable, corrupt or foreign file is compiled without, and replaced;
 * a directory that cannot be written (a read-only image, no home) is only not written. Files are
 * written to a temporary name and renamed, so no reader sees half a file; each carries its length
 * and CRC-32, checked before V8 sees it, and V8 checks its own version, flags and the source.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Script, constants } from 'node:vm';
import { crc32 } from 'node:zlib';

/** The file's first bytes; bump the digit when the layout below changes. */
const MAGIC = Buffer.from('PAWLCC01');
/**
 * MAGIC, then (uint32 little-endian each) the payload's length, its CRC-32 and how many of the
 * bundle's modules the writing run had evaluated, then V8's data.
 */
const HEADER = MAGIC.length + 12;

/** The bundle's count of modules evaluated (scripts/build.ts, countModules). */
const MODULES_EVALUATED = Symbol.for('pawl.modulesEvaluated');

function modulesEvaluated(): number {
  const n = (globalThis as { [MODULES_EVALUATED]?: unknown })[MODULES_EVALUATED];
  return typeof n === 'number' ? n : 0;
}

/** What became of the cache at this start (PAWL_CODE_CACHE_DEBUG=1 prints it). */
export type CacheOutcome = 'off' | 'absent' | 'accepted' | 'rejected' | 'corrupt';

/**
 * Where the cache lives, or null for none: PAWL_CODE_CACHE=0 turns it off; PAWL_CODE_CACHE_DIR
 * names the directory; else $XDG_CACHE_HOME/pawl/code-cache, else ~/.cache/pawl/code-cache.
 */
export function codeCacheDir(env: NodeJS.ProcessEnv, home: () => string = homedir): string | null {
  const off = env.PAWL_CODE_CACHE?.toLowerCase();
  if (off === '0' || off === 'off' || off === 'false' || off === 'no') return null;
  if (env.PAWL_CODE_CACHE_DIR) return env.PAWL_CODE_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'pawl', 'code-cache');
  let h = '';
  try {
    h = home();
  } catch {
    // No home directory (a container's arbitrary uid): no cache.
  }
  return h ? join(h, '.cache', 'pawl', 'code-cache') : null;
}

export interface CacheKey {
  /** The bundle's SHA-256 (written into the launcher at build time). */
  bundleHash: string;
  /** The command run (`none` for help and usage errors). */
  command: string;
  /** The V8 flags the launcher set before compiling. */
  flags: readonly string[];
  execArgv: readonly string[];
  nodeOptions: string | undefined;
}

/**
 * The cache file for this node, these V8 flags, this bundle and this command. V8 refuses data
 * made by another version or under other flags by itself; the key keeps each such combination
 * in its own file, so two of them in turn do not replace each other's at every start.
 */
export function cacheFileName(key: CacheKey): string {
  const digest = fnv1a64(
    JSON.stringify([
      MAGIC.toString(),
      process.version,
      process.arch,
      key.bundleHash,
      key.flags,
      key.execArgv,
      key.nodeOptions ?? '',
    ]),
  );
  return `${key.command.replace(/[^a-z0-9-]/gi, '_')}-${digest}.bin`;
}

/**
 * 64 bits of FNV-1a over the text's UTF-16 code units, as 16 hex digits: two 32-bit hashes from
 * different offset bases. The name only keeps combinations apart (V8 refuses another's data by
 * itself), and node:crypto, which a SHA-256 here needed, took ~4 ms to load at the start of every
 * command, and commands that configure nothing (`setters apply`, help) never load it otherwise
 * (issue 27).
 */
export function fnv1a64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

export interface Framed {
  /** V8's data. */
  payload: Buffer;
  /** Modules the run that wrote it had evaluated. */
  modules: number;
}

/** V8's data out of a cache file, or null when the file is not one whole cache file. */
export function unframe(file: Buffer): Framed | null {
  if (file.length < HEADER || !file.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const length = file.readUInt32LE(MAGIC.length);
  const payload = file.subarray(HEADER);
  if (payload.length !== length || crc32(payload) !== file.readUInt32LE(MAGIC.length + 4)) return null;
  return { payload, modules: file.readUInt32LE(MAGIC.length + 8) };
}

export function frame({ payload, modules }: Framed): Buffer {
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header);
  header.writeUInt32LE(payload.length, MAGIC.length);
  header.writeUInt32LE(crc32(payload), MAGIC.length + 4);
  header.writeUInt32LE(modules, MAGIC.length + 8);
  return Buffer.concat([header, payload]);
}

export interface LoadedBundle {
  /** The bundle's `module.exports`. */
  exports: unknown;
  outcome: CacheOutcome;
  /** The cache file read or to be written (null when off). */
  file: string | null;
  /**
   * Writes the cache unless this start used one (once; later calls do nothing). Call it after
   * the command's work, while the V8 flags are still the ones the bundle was compiled under.
   */
  save(): void;
}

export interface LoadOptions {
  /** The CommonJS bundle's path. */
  bundle: string;
  key: CacheKey;
  env: NodeJS.ProcessEnv;
  /** Where PAWL_CODE_CACHE_DEBUG=1 lines go. */
  debug?: (line: string) => void;
}

/**
 * Compiles and runs the CommonJS bundle as node's own loader would (the same wrapper
 * parameters, `require` relative to the bundle), with the cached code when there is one.
 */
export function loadBundle(opts: LoadOptions): LoadedBundle {
  const debug =
    opts.env.PAWL_CODE_CACHE_DEBUG === '1'
      ? (opts.debug ?? ((line: string) => process.stderr.write(`pawl: code cache: ${line}\n`)))
      : () => {};
  const dir = codeCacheDir(opts.env);
  const file = dir === null ? null : join(dir, cacheFileName(opts.key));
  let outcome: CacheOutcome = file === null ? 'off' : 'absent';
  let cachedData: Buffer | undefined;
  let cachedModules = 0;
  if (file !== null) {
    try {
      const framed = unframe(readFileSync(file));
      if (framed === null) outcome = 'corrupt';
      else ({ payload: cachedData, modules: cachedModules } = framed);
    } catch {
      // Absent or unreadable: compiled without.
    }
  }
  const t0 = performance.now();
  // The build refuses a bundle that is not ASCII (scripts/build.ts), and for ASCII Latin-1 reads
  // the same text: without the UTF-8 decoder's pass over 4 MB (8.4 → 4.7 ms of a start here).
  const source = readFileSync(opts.bundle, 'latin1');
  // The wrapper ends its line, and lineOffset -1 numbers the bundle's lines as in the file, so
  // stack traces and the source map beside the bundle agree.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {\n${source}\n})`, {
    filename: opts.bundle,
    lineOffset: -1,
    ...(cachedData ? { cachedData } : {}),
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cachedData) outcome = script.cachedDataRejected === true ? 'rejected' : 'accepted';
  debug(
    `${outcome} ${file ?? '(PAWL_CODE_CACHE=0)'} (${cachedData ? `${cachedModules} modules, ` : ''}read and compiled in ${ms(t0)})`,
  );
  const wrapper = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: { exports: unknown },
    filename: string,
    dirname: string,
  ) => void;
  const module = { exports: {} as unknown };
  wrapper.call(
    module.exports,
    module.exports,
    createRequire(opts.bundle),
    module,
    opts.bundle,
    dirname(opts.bundle),
  );
  let saved = file === null;
  return {
    exports: module.exports,
    outcome,
    file,
    save() {
      if (saved || file === null) return;
      saved = true;
      // An accepted cache is written again only when this run went further than the one that
      // wrote it (more modules evaluated): what it compiled anew is then kept too.
      const modules = modulesEvaluated();
      if (outcome === 'accepted' && modules <= cachedModules) return;
      try {
        const t1 = performance.now();
        const payload = script.createCachedData();
        writeCache(file, frame({ payload, modules }));
        debug(`written ${file} (${payload.length} bytes, ${modules} modules, in ${ms(t1)})`);
      } catch (err) {
        debug(`not written: ${(err as Error).message}`);
      }
    },
  };
}

const ms = (since: number): string => `${(performance.now() - since).toFixed(1)} ms`;

/** Temporary name, then rename: a reader sees the old file or the whole new one. */
function writeCache(file: string, framed: Buffer): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
  try {
    writeFileSync(tmp, framed, { mode: 0o600 });
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // Never created.
    }
    throw err;
  }
  // The same command's files for other bundles, nodes or flags: an upgrade leaves one file, not one per version.
  const name = file.slice(dir.length + 1);
  const command = name.slice(0, name.lastIndexOf('-'));
  for (const other of readdirSync(dir))
    if (
      other !== name &&
      other.startsWith(`${command}-`) &&
      /^-[0-9a-f]+\.bin$/.test(other.slice(command.length))
    )
      try {
        unlinkSync(join(dir, other));
      } catch {
        // Another process's to remove.
      }
}
