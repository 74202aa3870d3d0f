/**
 * What a process already knows of a workspace's commits: a few facts of one commit's tree and
 * history, learned from git (`ls-files` after a checkout, `log -L`) or from the commit pawl made
 * itself with `fast-import` (its tree is its parent's with pawl's files replaced; its message,
 * author and date are pawl's). A daemon's next pass usually starts at exactly that commit (its
 * own push), and then needs neither `ls-files` nor `log -L` for the lines it wrote: two git
 * processes fewer a webhook pass (docs/git.md, docs/performance.md).
 *
 * Every fact is keyed by the commit id, which names its content, so a fact is never stale: a
 * remote that moved (a person's commit, a hand-committed newer tag) checks out another commit,
 * and git is asked again. One commit a workspace is kept, the newest learned.
 *
 * Apart from those, how the process's last pass left each workspace (`LeftClean`): when the
 * remote is still at that commit, the next pass needs no `checkout` and no `clean` either.
 */
import type { LineChange } from '../guard/index.js';
import { copyString, type SmallMap } from '../util/index.js';

/** A marked line's last change at the commit, less what the asking request supplies. */
export interface KnownLine {
  /** The line's text at the commit (CR stripped): an answer holds only for a request of this text. */
  text: string;
  /** The marker the change was read for (its `previous` is that marker's value). */
  setter: string;
  change: Omit<LineChange, 'file' | 'line' | 'setter' | 'field' | 'value'>;
}

export interface KnownCommit {
  readonly commit: string;
  /**
   * The commit's tree has no `.gitattributes` (ls-files found none at it or at the parent pawl
   * committed it on, and pawl's commit changes only files that are not one).
   */
  noAttributes: boolean;
  /** Regular files of the tree, stage 0: path → mode and blob id. */
  readonly entries: Map<string, { mode: string; id: string }>;
  /** file → 1-based line → its last change. */
  readonly lines: Map<string, FileLines>;
}

/** A file's known lines by 1-based number: most marked files have one (SmallMap holds it in place). */
export type FileLines = SmallMap<number, KnownLine>;

/**
 * A change as a KnownLine keeps it: the same fields in the same order for every line, so all
 * share one hidden class (an object rest made each its own: ~280 bytes a line, issue 27).
 * The line's own strings are copies: a slice of the file or of `git log`'s output would keep
 * all of it for as long as the commit is known. The commit's facts (its id, parent, author,
 * subject, trailers) are shared by its lines, made their own once by whoever read the commit.
 */
function knownChange(c: KnownLine['change']): KnownLine['change'] {
  return {
    previous: c.previous === null ? null : copyString(c.previous),
    commit: c.commit,
    parent: c.parent,
    author: c.author,
    authorTime: c.authorTime,
    time: c.time,
    subject: c.subject,
    trailers: c.trailers,
  };
}

/** A marked line's last change as known.ts keeps it (see knownChange). */
export function knownLine(text: string, setter: string, change: KnownLine['change']): KnownLine {
  return { text: copyString(text), setter: copyString(setter), change: knownChange(change) };
}

const byWorkspace = new Map<string, KnownCommit>();

/**
 * A workspace as a pass of this process left it: HEAD on `branch` at `commit`, and the index
 * and the working tree exactly that commit's tree, nothing untracked (the pass committed every
 * file it wrote, or wrote none). `index` is `.git/index` as it was then: any git command that
 * writes the index (a checkout, a reset, another process's pass) renames a new file into place,
 * so a different inode, size or time means someone else has been there.
 */
export interface LeftClean {
  /** origin's URL then: a workspace left clean is also known whole for this URL (workspace.ts). */
  url: string;
  branch: string;
  commit: string;
  index: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint };
}

const leftClean = new Map<string, LeftClean>();

/** Records how a pass left the workspace `dir` (see LeftClean). */
export function noteLeftClean(dir: string, left: LeftClean): void {
  leftClean.set(dir, left);
}

/**
 * How the last pass left `dir`, once: the next checkout takes it, so a pass that does not end
 * by noting it again (a failure, a dry run, a pull request's branches) leaves nothing behind.
 */
export function takeLeftClean(dir: string): LeftClean | undefined {
  const left = leftClean.get(dir);
  leftClean.delete(dir);
  return left;
}

/**
 * How the last pass left `dir`, without taking it: whether the workspace is known whole and
 * without leftovers (openWorkspace), before the checkout takes the note.
 */
export function peekLeftClean(dir: string): LeftClean | undefined {
  return leftClean.get(dir);
}

/** What is known of `commit` in the workspace `dir`, if it is the one commit kept there. */
export function knownAt(dir: string, commit: string): KnownCommit | undefined {
  const k = byWorkspace.get(dir);
  return k && commit !== '' && k.commit === commit ? k : undefined;
}

/** The facts of `commit` in `dir`, to add to: the kept ones when they are that commit's, else new. */
export function learnAt(dir: string, commit: string): KnownCommit {
  const k = knownAt(dir, commit);
  if (k) return k;
  const fresh: KnownCommit = { commit, noAttributes: false, entries: new Map(), lines: new Map() };
  byWorkspace.set(dir, fresh);
  return fresh;
}

/** Forget the workspace `dir` (tests; a workspace removed and cloned again keeps its commits' facts). */
export function forgetKnown(dir?: string): void {
  if (dir === undefined) {
    byWorkspace.clear();
    leftClean.clear();
  } else {
    byWorkspace.delete(dir);
    leftClean.delete(dir);
  }
}

/**
 * `%s` of `git log` for a message: its first paragraph (after leading blank lines), each line
 * without its trailing white space, joined by spaces (git's pretty.c, `format_subject`).
 */
export function subjectOf(message: string): string {
  const lines = message.split('\n');
  let i = 0;
  while (i < lines.length && lines[i]!.trimEnd() === '') i++;
  const out: string[] = [];
  for (; i < lines.length; i++) {
    const l = lines[i]!.replace(/\s+$/, '');
    if (l === '') break;
    out.push(l);
  }
  return out.join(' ');
}

/**
 * The trailers `%(trailers:unfold,only)` lists for a message pawl committed, as `Key: value`
 * lines, when they can be told without git: the message has a title paragraph and a last
 * paragraph of plain `Key: value` lines only (what `interpret-trailers` appends pawl's trailers
 * as), and no line git could read as a comment or a divider. Otherwise null, and git is asked.
 */
export function plainTrailers(message: string): string | null {
  const lines = message.replace(/\n+$/, '').split('\n');
  if (lines.some((l) => l.startsWith('#') || l.startsWith('---') || l.includes('\r'))) return null;
  let start = lines.length;
  while (start > 0 && lines[start - 1]!.trim() !== '') start--;
  const block = lines.slice(start);
  const title = lines.slice(0, start).some((l) => l.trim() !== '');
  if (!title || block.length === 0) return null;
  if (!block.every((l) => /^[A-Za-z0-9][A-Za-z0-9-]*: ?\S(.*\S)?$/.test(l))) return null;
  return block.map((l) => l.replace(/^([A-Za-z0-9-]+): ?/, '$1: ')).join('\n');
}
