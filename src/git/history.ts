/**
 * The history of marked lines, read from Git (SPEC §4 "Pins": Git is the record of human intent).
 * For each marked line at HEAD: the last commit that changed it, the marker's value before that
 * commit, and the commit's author, time, subject and trailers.
 *
 * Cost is bounded per file, not per line: one `git blame` per file (one `-L` per marked line),
 * one `git diff-tree` per distinct blamed commit, one `git cat-file --batch` for every parent
 * version needed and one `git log --stdin` for all commit messages.
 */
import { findMarkers } from '../write/index.js';
import { parseTrailerLines, TRAILER_RELEASE, type LineChange, type MarkerField } from '../guard/index.js';
import { pool } from '../util/index.js';
import { git, gitBuffer, GitError, gitStream } from './exec.js';

export type { LineChange };

/** A marked line at HEAD, as `findMarkers` reports it. */
export interface MarkedLine {
  /** 1-based. */
  line: number;
  /** `ns:name[:field]`, as written in the comment. */
  setter: string;
  field: MarkerField;
  value: string;
}

export interface HistoryRequest {
  /** Path relative to the repository root, `/` separators. */
  file: string;
  lines: MarkedLine[];
  /**
   * The file's text at the revision, when the caller has just read it from a clean checkout
   * (saves reading it from git again). Line numbers refer to it.
   */
  text?: string;
}

export interface HistoryOptions {
  /** Revision the lines are numbered at; default HEAD. */
  rev?: string;
  /** Git processes run at once on the blame path; default 8. */
  concurrency?: number;
  /** `blame` forces one `git blame` per file (for comparison and tests); default: line-log first. */
  method?: 'auto' | 'blame';
}

/** file → line → its last change; null for a line git cannot attribute (file not committed). */
export type HistoryMap = Map<string, Map<number, LineChange | null>>;

interface BlameLine {
  commit: string;
  /** Line number in `commit`'s version of the file. */
  origLine: number;
  finalLine: number;
  /** Path in `commit`. */
  path: string;
  previous: { commit: string; path: string } | null;
}

interface CommitMeta {
  authorName: string;
  authorEmail: string;
  authorTime: Date;
  committerTime: Date;
  subject: string;
}

/**
 * The last change of every requested line. One `git log -L` walks history once for all files and
 * stops as soon as every line has met its last change (usually the newest commit); files where
 * two marked lines read the same, which line-log output cannot tell apart, and lines it could not
 * place go through `git blame` instead.
 */
export async function lineHistory(
  cwd: string,
  requests: readonly HistoryRequest[],
  opts: HistoryOptions = {},
): Promise<HistoryMap> {
  const rev = opts.rev ?? 'HEAD';
  const wanted = requests.filter((r) => r.lines.length > 0);
  if (opts.method === 'blame') return blameHistory(cwd, wanted, opts);
  // One ls-tree says which files the revision has (line-log refuses a batch naming a missing one).
  const blobs = await treeBlobs(
    cwd,
    rev,
    wanted.map((r) => r.file),
  );
  const heads = await catFiles(
    cwd,
    wanted.filter((r) => r.text === undefined && blobs.has(r.file)).map((r) => blobs.get(r.file)!),
  );
  const out: HistoryMap = new Map();
  const ranges: LogRange[] = [];
  const viaBlame: HistoryRequest[] = [];
  for (const r of wanted) {
    const blob = blobs.get(r.file);
    const text = blob === undefined ? null : (r.text ?? heads.get(blob) ?? null);
    if (text === null) {
      out.set(r.file, new Map(r.lines.map((l) => [l.line, null])));
      continue;
    }
    const rows = text.split('\n').map((l) => l.replace(/\r$/, ''));
    const lines = uniqueBy(r.lines, (l) => l.line);
    const texts = lines.map((l) => rows[l.line - 1]);
    if (
      texts.some((t) => t === undefined) ||
      new Set(texts).size !== texts.length ||
      r.file.includes(':') ||
      /[\n\r]/.test(r.file)
    ) {
      viaBlame.push(r);
      continue;
    }
    for (let i = 0; i < lines.length; i++)
      ranges.push({ file: r.file, marked: lines[i]!, text: texts[i]!, change: undefined });
  }
  if (ranges.length > 0) {
    try {
      await lineLog(cwd, rev, ranges);
    } catch (err) {
      // A text that is not the revision's (a dirty checkout) can name lines past a file's end;
      // blame answers file by file instead.
      if (!(err instanceof GitError)) throw err;
      for (const g of ranges) g.change = undefined;
    }
  }
  const unresolved = new Set<string>();
  for (const g of ranges) {
    let m = out.get(g.file);
    if (!m) out.set(g.file, (m = new Map()));
    if (g.change === undefined) unresolved.add(g.file);
    else m.set(g.marked.line, g.change);
  }
  for (const r of wanted)
    if (unresolved.has(r.file))
      viaBlame.push({ file: r.file, lines: r.lines.filter((l) => !out.get(r.file)?.has(l.line)) });
  if (viaBlame.length > 0) {
    const b = await blameHistory(cwd, viaBlame, opts);
    for (const [file, lines] of b) {
      let m = out.get(file);
      if (!m) out.set(file, (m = new Map()));
      for (const [line, c] of lines) m.set(line, c);
    }
  }
  for (const r of requests)
    if (!out.has(r.file)) out.set(r.file, new Map(r.lines.map((l) => [l.line, null])));
  return out;
}

interface LogRange {
  file: string;
  marked: MarkedLine;
  /** The line's text at the revision: the `+` line of its last change reads exactly so. */
  text: string;
  change: LineChange | null | undefined;
}

const LOG_FORMAT = '%x1e%H%x00%P%x00%an%x00%ae%x00%at%x00%ct%x00%s%x00%(trailers:unfold,only)%x00';

/** Streams `git log -L` over every range and kills it once each range has met its last change. */
async function lineLog(cwd: string, rev: string, ranges: LogRange[]): Promise<void> {
  const byFile = new Map<string, LogRange[]>();
  for (const g of ranges) {
    let a = byFile.get(g.file);
    if (!a) byFile.set(g.file, (a = []));
    a.push(g);
  }
  let open = ranges.length;
  // A repository's own config must not change what is parsed (signatures, path prefixes).
  const args = [
    '-c',
    'log.showSignature=false',
    'log',
    '--no-color',
    '--no-ext-diff',
    '--src-prefix=a/',
    '--dst-prefix=b/',
    `--format=${LOG_FORMAT}`,
  ];
  for (const g of ranges) args.push('-L', `${g.marked.line},${g.marked.line}:${g.file}`);
  args.push(rev, '--');

  const handle = (chunk: string): void => {
    const f = chunk.split('\0');
    if (f.length < 9) return;
    const [commit, parents, an, ae, at, ct, subject, trailerText] = f as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const diff = f.slice(8).join('\0');
    for (const fd of parseLineLogDiff(diff)) {
      const rs = byFile.get(fd.path);
      if (!rs) continue;
      for (const h of fd.hunks) {
        h.added.forEach((plus) => {
          const g = rs.find((x) => x.change === undefined && x.text === plus);
          if (!g) return;
          const setter = g.marked.setter;
          const sameSetter = h.removed.filter((m) => lineHasSetter(m, setter));
          const addedSame = h.added.filter((a) => lineHasSetter(a, setter));
          const rank = addedSame.indexOf(plus);
          // No removed line with this setter: the marked line is new in this commit.
          const before = sameSetter[rank >= 0 && sameSetter.length === addedSame.length ? rank : 0];
          g.change = {
            file: g.file,
            line: g.marked.line,
            setter,
            field: g.marked.field,
            value: g.marked.value,
            previous: before === undefined ? null : valueOnLine(before, setter),
            commit,
            parent: parents.split(' ')[0] || null,
            author: { name: an, email: ae },
            authorTime: new Date(Number(at) * 1000),
            time: new Date(Number(ct) * 1000),
            subject,
            trailers: parseTrailerLines(trailerText),
          };
          open--;
        });
      }
    }
  };

  // Through the one runner (timeout, process-group kill, redaction); stopped once every range is met.
  let buf = '';
  await gitStream(args, {
    cwd,
    onStdout: (d) => {
      buf += d;
      const cut = buf.lastIndexOf('\x1e');
      if (cut <= 0) return false;
      const complete = buf.slice(0, cut);
      buf = buf.slice(cut);
      for (const c of complete.split('\x1e')) if (c) handle(c);
      return open <= 0;
    },
  });
  if (open > 0) for (const c of buf.split('\x1e')) if (c) handle(c);
}

/** Per file, the hunks of a line-log patch with their removed and added lines (CR stripped). */
export function parseLineLogDiff(
  diff: string,
): { path: string; hunks: { removed: string[]; added: string[] }[] }[] {
  const files: { path: string; hunks: { removed: string[]; added: string[] }[] }[] = [];
  let file: (typeof files)[number] | null = null;
  let hunk: { removed: string[]; added: string[] } | null = null;
  let oldPath = '';
  for (const row of diff.split('\n')) {
    if (row.startsWith('diff --git ')) {
      file = null;
      hunk = null;
    } else if (row.startsWith('--- ') && hunk === null) {
      oldPath = stripPrefix(row.slice(4));
    } else if (row.startsWith('+++ ') && hunk === null) {
      const p = stripPrefix(row.slice(4));
      file = { path: p === '/dev/null' ? oldPath : p, hunks: [] };
      files.push(file);
    } else if (row.startsWith('@@') && file) {
      hunk = { removed: [], added: [] };
      file.hunks.push(hunk);
    } else if (hunk && row.startsWith('-')) hunk.removed.push(row.slice(1).replace(/\r$/, ''));
    else if (hunk && row.startsWith('+')) hunk.added.push(row.slice(1).replace(/\r$/, ''));
  }
  return files;
}

function lineHasSetter(line: string, setter: string): boolean {
  return valueOnLine(line, setter) !== null;
}

/**
 * The value of the marker `setter` on one line of YAML, read by the setters parser after the
 * indentation and any list dashes are removed (a marked scalar and its comment share a line).
 */
export function valueOnLine(line: string, setter: string): string | null {
  if (!line.includes(setter)) return null;
  const body = line.replace(/^[ \t]*(?:-[ \t]+)*/, '');
  const m = findMarkers(body, '').markers.find((x) => x.setter === setter);
  return m ? m.value : null;
}

function uniqueBy<T>(xs: readonly T[], key: (x: T) => unknown): T[] {
  const seen = new Set<unknown>();
  return xs.filter((x) => (seen.has(key(x)) ? false : (seen.add(key(x)), true)));
}

/** The same answer through one `git blame` per file (exact for any file, but a process per file). */
export async function blameHistory(
  cwd: string,
  requests: readonly HistoryRequest[],
  opts: HistoryOptions = {},
): Promise<HistoryMap> {
  const rev = opts.rev ?? 'HEAD';
  const out: HistoryMap = new Map();
  const metas = new Map<string, CommitMeta>();
  const blamed: { req: HistoryRequest; blames: Map<number, BlameLine> }[] = [];

  await pool(
    requests.filter((r) => r.lines.length > 0),
    opts.concurrency ?? 8,
    async (req) => {
      const blames = await blameFile(cwd, rev, req, metas);
      blamed.push({ req, blames });
    },
  );

  // Which (commit, path) diffs and parent versions are needed.
  const diffKeys = new Map<string, { commit: string; parent: string; paths: Set<string> }>();
  for (const { blames } of blamed) {
    for (const b of blames.values()) {
      if (!b.previous) continue;
      const k = `${b.commit}\0${b.previous.commit}`;
      let d = diffKeys.get(k);
      if (!d) diffKeys.set(k, (d = { commit: b.commit, parent: b.previous.commit, paths: new Set() }));
      d.paths.add(b.path);
      d.paths.add(b.previous.path);
    }
  }
  const hunks = new Map<string, Map<string, FileDiff>>();
  await pool([...diffKeys.entries()], opts.concurrency ?? 8, async ([k, d]) => {
    hunks.set(k, await diffCommit(cwd, d.parent, d.commit, [...d.paths]));
  });

  // Parent versions of the files, parsed for their markers (the setters parser, so values are
  // read exactly as the writer reads them).
  const wanted = new Set<string>();
  for (const { blames } of blamed)
    for (const b of blames.values())
      if (b.previous) {
        wanted.add(`${b.previous.commit}:${b.previous.path}`);
        wanted.add(`${b.commit}:${b.path}`);
      }
  const blobs = await catFiles(cwd, [...wanted]);
  const markersAt = new Map<string, Located[]>();
  for (const [spec, text] of blobs) markersAt.set(spec, text === null ? [] : findMarkers(text, spec).markers);
  const trailers = await commitTrailers(cwd, [
    ...new Set(blamed.flatMap(({ blames }) => [...blames.values()].map((b) => b.commit))),
  ]);

  for (const { req, blames } of blamed) {
    const perLine = new Map<number, LineChange | null>();
    out.set(req.file, perLine);
    for (const ml of req.lines) {
      const b = blames.get(ml.line);
      const meta = b ? metas.get(b.commit) : undefined;
      if (!b || !meta) {
        perLine.set(ml.line, null);
        continue;
      }
      let previous: string | null = null;
      if (b.previous) {
        const fd = hunks.get(`${b.commit}\0${b.previous.commit}`)?.get(b.path);
        const before = markersAt.get(`${b.previous.commit}:${b.previous.path}`) ?? [];
        const after = markersAt.get(`${b.commit}:${b.path}`) ?? [];
        previous = fd ? previousValue(fd, b.origLine, ml.setter, before, after) : null;
      }
      perLine.set(ml.line, {
        file: req.file,
        line: ml.line,
        setter: ml.setter,
        field: ml.field,
        value: ml.value,
        previous,
        commit: b.commit,
        parent: b.previous?.commit ?? null,
        author: { name: meta.authorName, email: meta.authorEmail },
        authorTime: meta.authorTime,
        time: meta.committerTime,
        subject: meta.subject,
        trailers: trailers.get(b.commit) ?? [],
      });
    }
  }
  for (const r of requests)
    if (!out.has(r.file)) out.set(r.file, new Map(r.lines.map((l) => [l.line, null])));
  return out;
}

/**
 * True when a commit after `since` (exclusive) up to `rev` carries `Pawl-Release: <policy>`:
 * `pawl release` lifted the pin set by `since`.
 */
export async function releasedSince(
  cwd: string,
  since: string,
  policy: string,
  rev = 'HEAD',
): Promise<boolean> {
  const { stdout } = await git(
    [
      '-c',
      'log.showSignature=false',
      'log',
      '--format=%x1e%(trailers:key=' + TRAILER_RELEASE + ',valueonly,unfold)',
      `${since}..${rev}`,
      '--',
    ],
    { cwd },
  );
  return stdout
    .split('\x1e')
    .flatMap((block) => block.split('\n'))
    .some((v) => v.trim() === policy);
}

// ---- blame ----

async function blameFile(
  cwd: string,
  rev: string,
  req: HistoryRequest,
  metas: Map<string, CommitMeta>,
): Promise<Map<number, BlameLine>> {
  const lines = [...new Set(req.lines.map((l) => l.line))].sort((a, b) => a - b);
  const args = ['blame', '--porcelain'];
  for (const n of lines) args.push('-L', `${n},${n}`);
  args.push(rev, '--', req.file);
  let stdout: string;
  try {
    ({ stdout } = await git(args, { cwd }));
  } catch (err) {
    // A file (or line) that is not in the revision has no history: nothing to pin.
    if (
      err instanceof GitError &&
      /no such path|has only \d+ lines?|fatal: file .* has only/i.test(err.stderr)
    )
      return new Map();
    throw err;
  }
  return parseBlame(stdout, metas);
}

/** Parses `git blame --porcelain`; commit headers appear only at a commit's first group. */
export function parseBlame(stdout: string, metas: Map<string, CommitMeta>): Map<number, BlameLine> {
  const out = new Map<number, BlameLine>();
  // Git prints a commit's headers, `previous` and `filename` only at its first group.
  const partial = new Map<
    string,
    Partial<CommitMeta> & { previous?: { commit: string; path: string } | null; path?: string }
  >();
  const rows = stdout.split('\n');
  let i = 0;
  while (i < rows.length) {
    const head = /^([0-9a-f]{40,64}) (\d+) (\d+)(?: (\d+))?$/.exec(rows[i] ?? '');
    if (!head) {
      i++;
      continue;
    }
    const commit = head[1]!;
    const origLine = Number(head[2]);
    const finalLine = Number(head[3]);
    let p = partial.get(commit);
    if (!p) partial.set(commit, (p = {}));
    let path: string | undefined;
    let previous: { commit: string; path: string } | null | undefined;
    for (i++; i < rows.length && !rows[i]!.startsWith('\t'); i++) {
      const row = rows[i]!;
      const sp = row.indexOf(' ');
      const key = sp < 0 ? row : row.slice(0, sp);
      const val = sp < 0 ? '' : row.slice(sp + 1);
      switch (key) {
        case 'author':
          p.authorName = val;
          break;
        case 'author-mail':
          p.authorEmail = val.replace(/^<|>$/g, '');
          break;
        case 'author-time':
          p.authorTime = new Date(Number(val) * 1000);
          break;
        case 'committer-time':
          p.committerTime = new Date(Number(val) * 1000);
          break;
        case 'summary':
          p.subject = val;
          break;
        case 'previous': {
          const s = val.indexOf(' ');
          previous = { commit: val.slice(0, s), path: unquote(val.slice(s + 1)) };
          break;
        }
        case 'boundary':
          previous = null;
          break;
        case 'filename':
          path = unquote(val);
          break;
      }
    }
    i++; // the content line
    if (previous !== undefined) p.previous = previous;
    if (path !== undefined) p.path = path;
    if (p.authorTime && p.committerTime && !metas.has(commit)) {
      metas.set(commit, {
        authorName: p.authorName ?? '',
        authorEmail: p.authorEmail ?? '',
        authorTime: p.authorTime,
        committerTime: p.committerTime,
        subject: p.subject ?? '',
      });
    }
    out.set(finalLine, { commit, origLine, finalLine, path: p.path ?? '', previous: p.previous ?? null });
  }
  return out;
}

// ---- diff ----

interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
}

interface FileDiff {
  hunks: Hunk[];
}

async function diffCommit(
  cwd: string,
  parent: string,
  commit: string,
  paths: string[],
): Promise<Map<string, FileDiff>> {
  const { stdout } = await git(
    [
      'diff',
      '--no-color',
      '--no-ext-diff',
      '--src-prefix=a/',
      '--dst-prefix=b/',
      '-U0',
      '-M',
      parent,
      commit,
      '--',
      ...paths,
    ],
    { cwd },
  );
  return parseDiff(stdout);
}

/** Hunk ranges per new path from a `-U0` diff. */
export function parseDiff(stdout: string): Map<string, FileDiff> {
  const out = new Map<string, FileDiff>();
  let cur: FileDiff | null = null;
  let oldPath = '';
  for (const row of stdout.split('\n')) {
    if (row.startsWith('diff --git ')) {
      cur = null;
      continue;
    }
    if (row.startsWith('--- ')) {
      oldPath = stripPrefix(row.slice(4));
      continue;
    }
    if (row.startsWith('+++ ')) {
      const p = stripPrefix(row.slice(4));
      cur = { hunks: [] };
      out.set(p === '/dev/null' ? oldPath : p, cur);
      continue;
    }
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(row);
    if (m && cur) {
      cur.hunks.push({
        oldStart: Number(m[1]),
        oldCount: m[2] === undefined ? 1 : Number(m[2]),
        newStart: Number(m[3]),
        newCount: m[4] === undefined ? 1 : Number(m[4]),
      });
    }
  }
  return out;
}

/** A marker's line, setter and value in one version of a file. */
export interface Located {
  line: number;
  setter: string;
  value: string;
}

/**
 * The marker's value before the commit. The changed line sits in one hunk; the same setter among
 * that hunk's removed lines is its earlier self (paired in order when the hunk rewrote several).
 * Failing that, a line moved within the file shows as exactly one unpaired removal and one
 * unpaired addition of the setter in the whole diff. Otherwise the commit added the line.
 */
export function previousValue(
  fd: FileDiff,
  origLine: number,
  setter: string,
  before: readonly Located[],
  after: readonly Located[],
): string | null {
  const removedIn = (h: Hunk) =>
    before.filter((m) => m.setter === setter && m.line >= h.oldStart && m.line < h.oldStart + h.oldCount);
  const addedIn = (h: Hunk) =>
    after.filter((m) => m.setter === setter && m.line >= h.newStart && m.line < h.newStart + h.newCount);
  const hunk = fd.hunks.find((h) => origLine >= h.newStart && origLine < h.newStart + h.newCount);
  if (!hunk) return null;
  const removed = removedIn(hunk);
  if (removed.length > 0) {
    const added = addedIn(hunk);
    const rank = added.findIndex((m) => m.line === origLine);
    if (added.length === removed.length && rank >= 0) return removed[rank]!.value;
    // Lines added or dropped around it: the removal at the nearest offset into the hunk.
    const target = hunk.oldStart + (origLine - hunk.newStart);
    return [...removed].sort((a, b) => Math.abs(a.line - target) - Math.abs(b.line - target))[0]!.value;
  }
  const unpairedRemoved = fd.hunks.filter((h) => addedIn(h).length === 0).flatMap(removedIn);
  const unpairedAdded = fd.hunks.filter((h) => removedIn(h).length === 0).flatMap(addedIn);
  if (unpairedRemoved.length === 1 && unpairedAdded.length === 1 && unpairedAdded[0]!.line === origLine)
    return unpairedRemoved[0]!.value;
  return null;
}

// ---- objects and messages ----

/** path → blob id at `rev`, for the given paths, through one `git ls-tree`. */
async function treeBlobs(cwd: string, rev: string, paths: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (paths.length === 0) return out;
  const { stdout } = await git(['ls-tree', '-r', '-z', '--full-tree', rev, '--', ...new Set(paths)], { cwd });
  for (const entry of stdout.split('\0')) {
    const m = /^\d+ blob ([0-9a-f]+)\t([\s\S]*)$/.exec(entry);
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

/** `rev:path` or object id → file text (null when missing), through one `git cat-file --batch`. */
async function catFiles(cwd: string, specs: string[]): Promise<Map<string, string | null>> {
  const out = new Map<string, string | null>();
  if (specs.length === 0) return out;
  // Paths with newlines cannot be asked for on a line-based protocol.
  const asked = specs.filter((s) => !s.includes('\n'));
  for (const s of specs) if (s.includes('\n')) out.set(s, null);
  // Bytes, not a string: the sizes in cat-file's headers count bytes.
  const { stdout: buf } = await gitBuffer(['cat-file', '--batch'], {
    cwd,
    input: asked.map((s) => `${s}\n`).join(''),
  });
  let pos = 0;
  for (const spec of asked) {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) break;
    const header = buf.subarray(pos, nl).toString('utf8');
    pos = nl + 1;
    const m = /^[0-9a-f]+ (\w+) (\d+)$/.exec(header);
    if (!m) {
      out.set(spec, null);
      continue;
    }
    const size = Number(m[2]);
    out.set(spec, m[1] === 'blob' ? buf.subarray(pos, pos + size).toString('utf8') : null);
    pos += size + 1;
  }
  return out;
}

async function commitTrailers(
  cwd: string,
  commits: string[],
): Promise<Map<string, { key: string; value: string }[]>> {
  const out = new Map<string, { key: string; value: string }[]>();
  if (commits.length === 0) return out;
  const { stdout } = await git(
    [
      '-c',
      'log.showSignature=false',
      'log',
      '--stdin',
      '--no-walk=unsorted',
      '--format=%x1e%H%x00%(trailers:unfold,only)',
    ],
    {
      cwd,
      input: commits.join('\n') + '\n',
    },
  );
  for (const block of stdout.split('\x1e')) {
    const z = block.indexOf('\0');
    if (z < 0) continue;
    out.set(block.slice(0, z).trim(), parseTrailerLines(block.slice(z + 1)));
  }
  return out;
}

function stripPrefix(p: string): string {
  const s = unquote(p.trim());
  return s.startsWith('a/') || s.startsWith('b/') ? s.slice(2) : s;
}

// Git C-quotes unusual paths ("a\tb"); JSON's escapes cover what git emits for them, except octal bytes.
function unquote(p: string): string {
  if (!(p.startsWith('"') && p.endsWith('"'))) return p;
  const bytes: number[] = [];
  const body = p.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const n = body[++i] ?? '';
    if (/[0-7]/.test(n)) {
      bytes.push(parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else
      bytes.push(
        ({ n: 10, t: 9, r: 13, '"': 34, '\\': 92, a: 7, b: 8, f: 12, v: 11 } as Record<string, number>)[n] ??
          n.charCodeAt(0),
      );
  }
  return Buffer.from(bytes).toString('utf8');
}
