/**
 * A commit of changed tracked files through `git fast-import`: the same commit object `git add`
 * and `git commit --only` make (tree, author, committer, dates, message with trailers), written
 * as one pack instead of a loose object per blob and per tree. On a cold pass that touches 500
 * files the loose objects were about a thousand files to create, and git spent 0.3–0.9 s of
 * system time on them (docs/performance.md); fast-import takes 0.06 s.
 *
 * Used only where it is the same commit: no signing (fast-import cannot sign), no
 * `.gitattributes` anywhere (git's clean filters and end-of-line conversion would change the
 * blobs), and every file tracked as a regular file and still one, of the same mode. Otherwise
 * `commitFast` answers `undefined` and the caller commits with `git commit`.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseTrailerLines } from '../guard/index.js';
import { valueOnLine } from './history.js';
import { copyString, SmallMap } from '../util/index.js';
import { knownAt, knownLine, learnAt, plainTrailers, subjectOf, type KnownCommit } from './known.js';
import type { Workspace } from './workspace.js';

export interface FastIdentity {
  name: string;
  email: string;
}

export interface FastCommitInput {
  author: FastIdentity;
  committer: FastIdentity;
  date: Date;
  /** The final message, trailers included (asked for only when there is something to commit). */
  message: () => Promise<string>;
  /**
   * The marked lines this commit rewrites, when it is the pass's only commit: their last change
   * is then this commit, known without `log -L` while HEAD stays at it (known.ts).
   */
  lines?: readonly OwnLine[];
}

/** A marked line pawl rewrites in place. */
export interface OwnLine {
  file: string;
  /** 1-based; pawl's edits never add or remove lines. */
  line: number;
  setter: string;
  /** The line's text before the commit, CR stripped. */
  before: string;
}

/** The characters git trims from both ends of a name or email (ident.c, `crud`). */
const crud = (c: number): boolean =>
  c <= 32 ||
  c === 0x2e || // .
  c === 0x2c || // ,
  c === 0x3a || // :
  c === 0x3b || // ;
  c === 0x3c || // <
  c === 0x3e || // >
  c === 0x22 || // "
  c === 0x5c || // \
  c === 0x27; // '

/** A name or email as `git commit` stores it: crud trimmed from both ends, `<`, `>` and newlines dropped. */
export function identPart(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && crud(s.charCodeAt(start))) start++;
  while (end > start && crud(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end).replace(/[<>\n]/g, '');
}

/** A path as fast-import reads it: C-style quoted, so spaces, quotes and newlines are safe. */
export function quotePath(path: string): string {
  let out = '"';
  for (const byte of Buffer.from(path, 'utf8')) {
    if (byte === 0x22) out += '\\"';
    else if (byte === 0x5c) out += '\\\\';
    else if (byte === 0x0a) out += '\\n';
    else if (byte < 0x20 || byte === 0x7f || byte >= 0x80) out += `\\${byte.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(byte);
  }
  return `${out}"`;
}

/** `git hash-object` of a blob, in the repository's object format (SHA-1, or SHA-256). */
export function blobId(content: Buffer, hexLength: number): string {
  return createHash(hexLength === 64 ? 'sha256' : 'sha1')
    .update(`blob ${content.length}\0`)
    .update(content)
    .digest('hex');
}

export interface StagedFile {
  path: string;
  mode: string;
  content: Buffer;
}

/** The fast-import stream of one commit on top of `parent`, written to `ref`. Pure. */
export function fastImportStream(
  ref: string,
  parent: string,
  c: Omit<FastCommitInput, 'message'> & { message: string },
  files: StagedFile[],
): Buffer {
  const when = `${Math.floor(c.date.getTime() / 1000)} +0000`;
  const ident = (who: 'author' | 'committer', i: FastIdentity): string =>
    `${who} ${identPart(i.name)} <${identPart(i.email)}> ${when}\n`;
  const message = Buffer.from(c.message, 'utf8');
  const parts: Buffer[] = [
    Buffer.from(
      `commit ${ref}\nmark :1\n${ident('author', c.author)}${ident('committer', c.committer)}data ${message.length}\n`,
    ),
    message,
    Buffer.from(`\nfrom ${parent}\n`),
  ];
  for (const f of files) {
    parts.push(
      Buffer.from(`M ${f.mode} inline ${quotePath(f.path)}\ndata ${f.content.length}\n`),
      f.content,
      Buffer.from('\n'),
    );
  }
  // The new commit's id on standard output (fast-import's cat-blob-fd): no rev-parse after it.
  parts.push(Buffer.from('\nget-mark :1\ndone\n'));
  return Buffer.concat(parts);
}

const TEMP_REF = 'refs/pawl/fast-commit';

/**
 * Commits `files` (paths from the repository root, tracked) as they are in the working tree.
 * Returns the new commit, null when none of them changed, or undefined when this commit must be
 * made by `git commit` instead (see the module comment).
 */
export async function commitFast(
  ws: Workspace,
  files: readonly string[],
  input: FastCommitInput,
): Promise<string | null | undefined> {
  if (identPart(input.author.name) === '' || identPart(input.author.email) === '') return undefined;
  if (identPart(input.committer.name) === '' || identPart(input.committer.email) === '') return undefined;
  // A workspace is a clone pawl made: its git directory is `.git` inside it (openWorkspace checks).
  if (existsSync(join(ws.dir, '.git', 'info', 'attributes'))) return undefined;
  // The tree's entries of these files, and whether it has a .gitattributes anywhere: known when
  // HEAD is a commit whose tree this process learned (its own last commit, usually); else the
  // index says, which right after the checkout is HEAD's tree.
  const head = ws.head;
  const known = head ? knownAt(ws.dir, head) : undefined;
  let index: ReadonlyMap<string, { mode: string; id: string }>;
  if (known?.noAttributes && files.every((f) => known.entries.has(f))) index = known.entries;
  else {
    const listed = (
      await ws.git([
        'ls-files',
        '--stage',
        '-z',
        '--',
        ':(top,glob)**/.gitattributes',
        ...files.map((f) => `:(top,literal)${f}`),
      ])
    ).stdout;
    const fromIndex = new Map<string, { mode: string; id: string }>();
    for (const entry of listed.split('\0')) {
      if (entry === '') continue;
      const tab = entry.indexOf('\t');
      const [mode, id, stage] = entry.slice(0, tab).split(' ');
      const path = entry.slice(tab + 1);
      if (path === '.gitattributes' || path.endsWith('/.gitattributes')) return undefined;
      if (stage !== '0' || (mode !== '100644' && mode !== '100755')) return undefined;
      fromIndex.set(path, { mode, id: id! });
    }
    index = fromIndex;
    if (head) {
      const k = learnAt(ws.dir, head);
      k.noAttributes = true;
      // Copies: the paths and ids are slices of ls-files' output, which would be kept whole.
      for (const [path, e] of fromIndex)
        k.entries.set(copyString(path), { mode: copyString(e.mode), id: copyString(e.id) });
    }
  }
  const changed: StagedFile[] = [];
  for (const path of [...new Set(files)].sort()) {
    const entry = index.get(path);
    if (!entry) return undefined;
    // What `git add` would stage must still be a regular file of the mode the index has. A file
    // replaced by a symlink is committed as a symlink (120000, its target as the blob), a changed
    // executable bit as the new mode, a deleted file as deleted: `git commit` does all three,
    // where reading through the link and keeping the index's mode would not.
    const st = await lstat(join(ws.dir, path)).catch(() => undefined);
    if (!st?.isFile() || (st.mode & 0o100 ? '100755' : '100644') !== entry.mode) return undefined;
    const content = await readFile(join(ws.dir, path));
    if (blobId(content, entry.id.length) !== entry.id) changed.push({ path, mode: entry.mode, content });
  }
  if (changed.length === 0) return null;

  // The workspace knows its HEAD (pawl is its only writer); were it stale, the commit below is
  // refused, because HEAD is no longer `parent`.
  const parent = ws.head || (await ws.git(['rev-parse', '--verify', 'HEAD^{commit}'])).stdout.trim();
  const finalMessage = await input.message();
  // On a branch, fast-import moves it itself, and only as a fast-forward of what it is by then
  // (no --force: a branch someone committed on meanwhile is refused, their commit kept, and
  // fast-import fails); HEAD, a symbolic ref to it, follows, one git process fewer a commit.
  // Detached, the commit goes to a scratch ref (forced: a crash may have left it anywhere) and
  // update-ref moves HEAD from the parent it was made on.
  const onBranch = ws.branch !== null;
  const imported = await ws.git(
    ['fast-import', '--quiet', '--done', '--date-format=raw', ...(onBranch ? [] : ['--force'])],
    {
      input: fastImportStream(
        onBranch ? `refs/heads/${ws.branch}` : TEMP_REF,
        parent,
        { ...input, message: finalMessage },
        changed,
      ),
    },
  );
  const made = imported.stdout.trim();
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(made))
    throw new Error(
      `git fast-import did not answer with the new commit's id (it said "${made.slice(0, 80)}")`,
    );
  if (!onBranch)
    await ws.git(['update-ref', '--stdin'], {
      input: `update HEAD ${made} ${parent}\ndelete ${TEMP_REF}\n`,
    });
  // The index follows, so the workspace is clean again.
  await ws.git(['update-index', '--index-info'], {
    input: changed
      .map((f) => `${f.mode} ${blobId(f.content, parent.length)}\t${quotePath(f.path)}\n`)
      .join(''),
  });
  remember(
    ws.dir,
    head ? knownAt(ws.dir, head) : undefined,
    made,
    parent,
    index,
    changed,
    input,
    finalMessage,
  );
  return made;
}

/**
 * The facts of the commit just made: its parent's entries with the changed files replaced, the
 * parent's known lines of the files it leaves alone, and for the lines it rewrote, itself as
 * their last change — as `git log` would print it (author and committer as fast-import stored
 * them, the subject and trailers of the message), or nothing when the trailers need git.
 */
function remember(
  dir: string,
  parentKnown: KnownCommit | undefined,
  made: string,
  parent: string,
  index: ReadonlyMap<string, { mode: string; id: string }>,
  changed: readonly StagedFile[],
  input: FastCommitInput,
  message: string,
): void {
  const carried = parentKnown?.noAttributes ? parentKnown : undefined;
  const next = learnAt(dir, made);
  next.noAttributes = true;
  for (const [path, e] of carried?.entries ?? []) next.entries.set(path, e);
  for (const [path, e] of index) next.entries.set(path, e);
  const paths = new Set<string>();
  for (const f of changed) {
    paths.add(f.path);
    next.entries.set(f.path, { mode: f.mode, id: blobId(f.content, parent.length) });
  }
  for (const [file, lines] of carried?.lines ?? []) if (!paths.has(file)) next.lines.set(file, lines);
  const trailers = input.lines?.length ? plainTrailers(message) : null;
  if (trailers === null) return;
  const when = new Date(Math.floor(input.date.getTime() / 1000) * 1000);
  // The commit's facts, shared by the lines it changed; copies, as known.ts keeps them.
  const meta = {
    commit: copyString(made),
    parent: copyString(parent),
    author: { name: identPart(input.author.name), email: identPart(input.author.email) },
    authorTime: when,
    time: when,
    subject: copyString(subjectOf(message)),
    trailers: parseTrailerLines(trailers),
  };
  const texts = new Map(changed.map((f) => [f.path, f.content.toString('utf8').split('\n')]));
  for (const l of input.lines ?? []) {
    const text = texts.get(l.file)?.[l.line - 1]?.replace(/\r$/, '');
    if (text === undefined || text === l.before) continue;
    let m = next.lines.get(l.file);
    if (!m) next.lines.set(l.file, (m = new SmallMap()));
    m.set(l.line, knownLine(text, l.setter, { ...meta, previous: valueOnLine(l.before, l.setter) }));
  }
}
