/**
 * SQLite's schema versions, applied in order; `PRAGMA user_version` records the last one applied.
 * Append new steps; never edit a released one. Times are integer milliseconds since the epoch.
 */
import { schemaV1 } from '../schema.js';

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
  // 4: commit batches open now (spec.git.commit.batch): when each automation's window opened.
  `
  CREATE TABLE commit_batches (
    automation TEXT    PRIMARY KEY,
    opened_at  INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
];
