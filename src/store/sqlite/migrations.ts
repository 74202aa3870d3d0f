/**
 * SQLite's schema versions, applied in order; `PRAGMA user_version` records the last one applied.
 * Append new steps; never edit a released one. Times are integer milliseconds since the epoch.
 */
import { scanHeads, schemaV1, selectionHeads } from '../schema.js';

export const MIGRATIONS: readonly string[] = [
  schemaV1({
    id: 'INTEGER PRIMARY KEY AUTOINCREMENT',
    big: 'INTEGER',
    flag: 'INTEGER',
    keyed: ' WITHOUT ROWID',
    indexes: '',
  }),
  // 2: webhook work `pawl serve` accepted and has not done yet (its queue, durable across a crash).
  `
  CREATE TABLE serve_work (
    key          TEXT    PRIMARY KEY,
    repositories TEXT    NOT NULL,
    tags         TEXT    NOT NULL,
    events       INTEGER NOT NULL,
    first_at     INTEGER NOT NULL,
    version      INTEGER NOT NULL
  );
  `,
  // 3: digests whose signatures spec.verify accepted, by verifier (docs/gates.md).
  `
  CREATE TABLE verified_digests (
    key    TEXT    PRIMARY KEY,
    signer TEXT    NOT NULL,
    at     INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // 4: the scans still marked running, by repository. Every beginScan marks a dead process's
  // scans interrupted; without this index that looked at every scan the repository ever had
  // (1.7 ms per scan at 10,000 scans of history, growing with every pass).
  `
  CREATE INDEX scans_running ON scans (repository) WHERE outcome = 'running';
  `,
  // 5: the newest tag a selection passed over for failing spec.verify, as JSON {tag, why}.
  `ALTER TABLE selections ADD COLUMN unverified TEXT;`,
  // 6: no index on tags' last_scan_id. Every good scan moves every listed tag's last_scan_id,
  // and the index made each of those updates a delete and an insert in a second B-tree; every
  // statement that asks by last_scan_id also names the repository and image, the primary key's
  // prefix, and SQLite's plans used that. A rescan of 5,000 unchanged tags: 15–18 → 10 ms of
  // CPU, 105–132 → 62–68 ms wall (docs/performance.md, "Issue 27: scale").
  'DROP INDEX IF EXISTS tags_by_scan;',
  // 7: commit batches open now (spec.git.commit.batch): when each automation's window opened.
  `
  CREATE TABLE commit_batches (
    automation TEXT    PRIMARY KEY,
    opened_at  INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // 8: each good scan's list scan, the scan whose id its tags' rows carry. A scan that lists what
  // the previous good one listed points at that one's list scan and writes no tag row: a rescan
  // of 5,000 unchanged tags rewrote 5,000 rows (docs/store.md, "Unchanged rescans"). Null on
  // the scans before it: each wrote its own rows, and is its own list scan.
  'ALTER TABLE scans ADD COLUMN list_scan_id INTEGER;',
  // 9: carried decisions (../carry.ts, docs/store.md "Carried decisions"). A run whose decisions
  // mostly repeat an earlier run's stores only those that differ, the ids of all of them
  // (decisions_first …, decisions_count of them), and the run it carries the rest from with the
  // positions of that run's rows it does not repeat. The daemon's webhook pass wrote 500 rows
  // for one changed image of 500. Null on the runs before it: each holds all its rows. A policy's
  // decisions read only the carried runs whose base decided it (decisions_by_policy_run).
  `
  ALTER TABLE runs ADD COLUMN decisions_base INTEGER;
  ALTER TABLE runs ADD COLUMN decisions_first INTEGER;
  ALTER TABLE runs ADD COLUMN decisions_count INTEGER;
  ALTER TABLE runs ADD COLUMN decisions_excluded TEXT;
  CREATE INDEX runs_carried ON runs (decisions_first) WHERE decisions_base IS NOT NULL;
  CREATE INDEX decisions_by_policy_run ON decisions (policy, run_id);
  `,
  // 10: each repository's newest scans in scan_heads, its history through scans.prev_id, and no
  // index on scans keyed by repository (../schema.ts, scanHeads). beginScan sets prev_id; these
  // triggers keep the heads, so every writer of scans keeps them alike (a start that interrupts
  // every running scan included). SQLite's max() of a NULL is NULL: hence the coalesces.
  `${scanHeads({ big: 'INTEGER', keyed: ' WITHOUT ROWID' })}
  CREATE TRIGGER scan_heads_begun AFTER INSERT ON scans BEGIN
    INSERT INTO scan_heads (repository, image, last_id, finished_id, good_id)
      VALUES (NEW.repository, NEW.image, NEW.id,
        CASE WHEN NEW.outcome <> 'running' THEN NEW.id END, CASE WHEN NEW.outcome = 'ok' THEN NEW.id END)
      ON CONFLICT (repository, image) DO UPDATE SET
        last_id = max(last_id, excluded.last_id),
        finished_id = coalesce(max(finished_id, excluded.finished_id), finished_id, excluded.finished_id),
        good_id = coalesce(max(good_id, excluded.good_id), good_id, excluded.good_id);
  END;
  CREATE TRIGGER scan_heads_ended AFTER UPDATE OF outcome ON scans WHEN NEW.outcome <> 'running' BEGIN
    UPDATE scan_heads SET
      finished_id = max(coalesce(finished_id, 0), NEW.id),
      good_id = CASE WHEN NEW.outcome = 'ok' THEN max(coalesce(good_id, 0), NEW.id) ELSE good_id END
    WHERE repository = NEW.repository AND image = NEW.image;
  END;
  DROP INDEX scans_by_repository;
  DROP INDEX scans_good;
  `,
  // 11: each policy's newest selection in selection_heads, its history through selections.prev_id
  // (../schema.ts, selectionHeads). recordSelection links a selection to the head and
  // moveSelectionHead moves the head to it, under the write lock. Not a trigger: a statement with
  // one journals every page it touches for its own rollback, and a pass's 500 selections in one
  // savepoint then wrote ~6 MB of statement journal to a temporary file.
  `${selectionHeads({ big: 'INTEGER', keyed: ' WITHOUT ROWID' })}
  DROP INDEX selections_by_policy;
  `,
];
