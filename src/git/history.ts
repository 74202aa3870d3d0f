/**
 * The history of marked lines, read from Git (SPEC §4 "Pins": Git is the record of human intent).
 * For each marked line at HEAD: the last commit that changed it, the marker's value before that
 * commit, and the commit's author, time, subject and trailers.
 *
 * One `git log -L` answers for all files at once (here); what it cannot tell apart goes through
 * `git blame`, file by file (blame.ts).
 */
import { findMarkers } from '../write/index.js';
import { parseTrailerLines, TRAILER_RELEASE, type LineChange, type MarkerField } from '../guard/index.js';
import { blameHistory } from './blame.js';
import { git, GitError, gitStream } from './exec.js';
import { copyString, SmallMap } from '../util/index.js';
import { knownAt, knownLine, learnAt } from './known.js';
import { catFiles, stripPrefix, treeBlobs } from './objects.js';

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
  /**
   * The requests' texts were read from a clean checkout of `rev` (pawl's workspace), so every
   * file named with its text is in the revision: no `ls-tree` to ask. Were one not, line-log
   * would refuse the batch and blame would answer file by file, as for a dirty checkout.
   */
  checkedOut?: boolean;
  /**
   * The commit `rev` is (with `checkedOut`): lines whose last change this process knows at that
   * commit (known.ts: pawl's own last commit rewrote them) are answered without git, and what git
   * answers is kept for the next pass at the same commit.
   */
  head?: string;
}

/** file → line → its last change; null for a line git cannot attribute (file not committed). */
export type HistoryMap = Map<string, Map<number, LineChange | null>>;

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
  if (opts.method === 'blame')
    return blameHistory(
      cwd,
      requests.filter((r) => r.lines.length > 0),
      opts,
    );
  const head = opts.checkedOut === true ? opts.head : undefined;
  const known =
    head === undefined ? new Map<string, Map<number, LineChange>>() : fromKnown(cwd, head, requests);
  const wanted: HistoryRequest[] = [];
  for (const r of requests) {
    const k = known.get(r.file);
    const lines = k ? r.lines.filter((l) => !k.has(l.line)) : r.lines;
    if (lines.length > 0) wanted.push(lines === r.lines ? r : { ...r, lines });
  }
  const out = await asked(cwd, rev, wanted, opts);
  for (const [file, lines] of known) {
    let m = out.get(file);
    if (!m) out.set(file, (m = new Map()));
    for (const [line, c] of lines) m.set(line, c);
  }
  return out;
}

/** The requested lines whose last change is known at `head` and whose text at HEAD is the known one. */
function fromKnown(
  cwd: string,
  head: string,
  requests: readonly HistoryRequest[],
): Map<string, Map<number, LineChange>> {
  const out = new Map<string, Map<number, LineChange>>();
  const k = knownAt(cwd, head);
  if (!k) return out;
  for (const r of requests) {
    const lines = k.lines.get(r.file);
    if (!lines || r.text === undefined) continue;
    let rows: string[] | undefined;
    for (const l of r.lines) {
      const kl = lines.get(l.line);
      if (!kl || kl.setter !== l.setter) continue;
      rows ??= r.text.split('\n');
      if (rows[l.line - 1]?.replace(/\r$/, '') !== kl.text) continue;
      let m = out.get(r.file);
      if (!m) out.set(r.file, (m = new Map()));
      m.set(l.line, {
        ...kl.change,
        file: r.file,
        line: l.line,
        setter: l.setter,
        field: l.field,
        value: l.value,
      });
    }
  }
  return out;
}

/** `lineHistory` of the lines not known already: git's answer. */
async function asked(
  cwd: string,
  rev: string,
  requests: readonly HistoryRequest[],
  opts: HistoryOptions,
): Promise<HistoryMap> {
  const wanted = requests.filter((r) => r.lines.length > 0);
  // One ls-tree says which files the revision has (line-log refuses a batch naming a missing one).
  const inHand = opts.checkedOut === true && wanted.every((r) => r.text !== undefined);
  const blobs = inHand
    ? new Map(wanted.map((r) => [r.file, '']))
    : await treeBlobs(
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
  const learnt = opts.checkedOut === true && opts.head ? learnAt(cwd, opts.head) : undefined;
  for (const g of ranges) {
    let m = out.get(g.file);
    if (!m) out.set(g.file, (m = new Map()));
    if (g.change === undefined) unresolved.add(g.file);
    else m.set(g.marked.line, g.change);
    if (learnt && g.change) {
      let k = learnt.lines.get(g.file);
      if (!k) learnt.lines.set(g.file, (k = new SmallMap()));
      k.set(g.marked.line, knownLine(g.text, g.marked.setter, g.change));
    }
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
    // One commit's facts, shared by the lines it changed: a daemon keeps them (known.ts), and the
    // first pass over a tree of 10,000 marked lines met them all in one commit (issue 27).
    let meta: Omit<LineChange, 'file' | 'line' | 'setter' | 'field' | 'value' | 'previous'> | undefined;
    // Its strings are copies, not slices of git's output, which holds every file's diff.
    const commitMeta = () =>
      (meta ??= {
        commit: copyString(commit),
        parent: parents === '' ? null : copyString(parents.split(' ')[0]!),
        author: { name: copyString(an), email: copyString(ae) },
        authorTime: new Date(Number(at) * 1000),
        time: new Date(Number(ct) * 1000),
        subject: copyString(subject),
        trailers: parseTrailerLines(copyString(trailerText)),
      });
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
            ...commitMeta(),
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
