/**
 * SQLite's group commits (docs/store.md): each SQLite commit appends its pages to the WAL, and a
 * pass over 500 repositories made about 1,500 of them (a scan's start and end, each selection and
 * run record) and spent a tenth of its CPU in them. Grouped, the same writes take a few dozen.
 */
import type Database from 'better-sqlite3';
import { RuntimeError, errorMessage } from '../../util/index.js';

/** How long the first write of a group waits for others before they are committed together. */
const GROUP_COMMIT_MS = 20;

/**
 * The groups of this process that are open, by file. Two handles on one file in one process
 * (tests; a library caller) would otherwise not see each other's writes, and the second writer
 * would block the thread in SQLite's busy wait while the timer that ends the first group could
 * not run: each handle commits the others' groups before it touches the file.
 */
const openGroups = new Map<string, Set<WriteGroups>>();

/**
 * The write groups of one connection: the first write opens an immediate transaction, and each
 * write runs inside it as a savepoint (all of it or none of it); the group is committed
 * `GROUP_COMMIT_MS` later, by `flush`, by `close`, or when the process exits. Reads on this
 * connection see the group at once; another process sees it once committed. The database only
 * caches observations (SPEC §7), so a crash loses at most the last few milliseconds of them.
 */
export class WriteGroups {
  #group: NodeJS.Timeout | undefined;
  /** A group's commit that failed in its timer, reported by the next write or flush. */
  #lost: Error | undefined;
  /** Why the last commit failed, until one succeeds again (a full disk): for readiness. */
  #failing: string | null = null;
  #failures = 0;
  #savepoints:
    { begin: Database.Statement; release: Database.Statement; undo: Database.Statement } | undefined;
  /** Run in the open group just before it commits (beforeCommit), once each. */
  #beforeCommit: (() => void)[] = [];
  readonly #commitOnExit = (): void => {
    try {
      this.#commit();
    } catch (err) {
      // Nothing is left to report it to: say it on the way out.
      process.stderr.write(`pawl: ${errorMessage(err)}\n`);
    }
  };

  constructor(
    private readonly db: Database.Database,
    private readonly location: string,
  ) {}

  /** Commits the groups other handles on this file hold open (before any statement of this one). */
  commitOthers(): void {
    const open = openGroups.get(this.location);
    if (open === undefined) return;
    for (const other of open) if (other !== this) other.#commitQuietly();
  }

  #commitQuietly(): void {
    try {
      this.#commit();
    } catch (err) {
      this.#lost = err instanceof Error ? err : new Error(String(err));
    }
  }

  /** Runs `fn` as one all-or-nothing write inside the open group (opening one if needed). */
  write<T>(fn: () => T): T {
    this.#throwLost();
    if (this.#group === undefined) {
      this.commitOthers();
      this.db.exec('BEGIN IMMEDIATE');
      this.#group = setTimeout(() => this.#commitQuietly(), GROUP_COMMIT_MS);
      process.once('exit', this.#commitOnExit);
      if (this.location !== ':memory:') {
        const open = openGroups.get(this.location) ?? new Set();
        openGroups.set(this.location, open.add(this));
      }
    }
    return this.#savepoint(fn);
  }

  /**
   * `fn` all or nothing, in the open transaction. A savepoint of our own rather than
   * `db.transaction(fn)()`: that builds four wrapper functions and defines twenty properties on
   * them for every write, and a pass makes a thousand writes (issue 27). The same statements,
   * the same all-or-nothing.
   */
  #savepoint<T>(fn: () => T): T {
    this.#savepoints ??= {
      begin: this.db.prepare('SAVEPOINT pawl_write'),
      release: this.db.prepare('RELEASE pawl_write'),
      undo: this.db.prepare('ROLLBACK TO pawl_write'),
    };
    const sp = this.#savepoints;
    sp.begin.run();
    try {
      const result = fn();
      sp.release.run();
      return result;
    } catch (err) {
      // A connection closed under the write has nothing left to undo.
      if (this.db.inTransaction) {
        sp.undo.run();
        sp.release.run();
      }
      throw err;
    }
  }

  /**
   * Runs `fn` as a write of the open group just before it commits: housekeeping a group needs
   * once, not at each of its writes (the raw responses' pruning). One that fails is undone as
   * any write is, and the group commits without it.
   */
  beforeCommit(fn: () => void): void {
    this.#beforeCommit.push(fn);
  }

  #commit(): void {
    if (this.#group === undefined) return;
    const ended = this.db.open && this.db.inTransaction ? this.#runBeforeCommit() : null;
    clearTimeout(this.#group);
    this.#group = undefined;
    process.removeListener('exit', this.#commitOnExit);
    const open = openGroups.get(this.location);
    if (open?.delete(this) && open.size === 0) openGroups.delete(this.location);
    if (!this.db.open || !this.db.inTransaction) {
      // SQLite rolled the group back under a housekeeping write (a full disk): lost, and said so.
      if (ended !== null) this.#lose(ended);
      return;
    }
    try {
      this.db.exec('COMMIT');
      this.#failing = null;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.#lose(err);
    }
  }

  /**
   * The group's beforeCommit writes, once each. One that fails is undone by its savepoint and the
   * group commits without it; the error that ended the whole transaction, if one did, is returned.
   * When there is no transaction to run them in they are kept for the next group.
   */
  #runBeforeCommit(): unknown {
    const due = this.#beforeCommit;
    this.#beforeCommit = [];
    for (const fn of due) {
      try {
        this.#savepoint(fn);
      } catch (err) {
        if (!this.db.inTransaction) return err;
      }
    }
    return null;
  }

  #lose(err: unknown): never {
    this.#failures++;
    this.#failing = `cannot commit to the state database ${this.location}: ${errorMessage(err)}`;
    throw new RuntimeError(
      `${this.#failing} (the writes of the last ${GROUP_COMMIT_MS} ms are lost; the next pass observes again)`,
    );
  }

  /** How many commits failed so far: what was written before one may not be stored. */
  failures(): number {
    return this.#failures;
  }

  /** Why writes do not land now (the last commit failed and none has succeeded since), or null. */
  failing(): string | null {
    return this.#failing;
  }

  #throwLost(): void {
    const lost = this.#lost;
    if (lost === undefined) return;
    this.#lost = undefined;
    throw lost;
  }

  /** Commits the open group; a group that failed to commit in its timer is reported here. */
  flush(): void {
    this.#commit();
    this.#throwLost();
  }

  /** Commits the open group, then closes the connection. */
  close(): void {
    try {
      this.#commit();
    } finally {
      if (this.db.open) this.db.close();
    }
  }
}
