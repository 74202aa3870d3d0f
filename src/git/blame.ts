/**
 * The last change of marked lines through `git blame`: exact for any file, at the cost of a
 * process per file. Cost is bounded per file, not per line: one `git blame` per file (one `-L`
 * per marked line), one `git diff` per distinct blamed commit, one `git cat-file --batch` for
 * every parent version needed and one `git log --stdin` for all commit messages.
 */
import { findMarkers } from '../write/index.js';
import type { LineChange } from '../guard/index.js';
import { pool } from '../util/index.js';
import { git, GitError } from './exec.js';
import type { HistoryMap, HistoryOptions, HistoryRequest } from './history.js';
import { catFiles, commitTrailers, stripPrefix, unquote } from './objects.js';

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

/** `lineHistory`'s answer through one `git blame` per file (exact for any file, but a process per file). */
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
