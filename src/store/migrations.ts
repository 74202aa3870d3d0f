/**
 * Schema versions, applied in order; `PRAGMA user_version` records the last one applied.
 * Append new steps; never edit a released one. Times are integer milliseconds since the epoch.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: scans, tags, raw responses, digests, build times, policies, runs, decisions, events.
  `
  CREATE TABLE scans (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    repository  TEXT    NOT NULL,
    image       TEXT    NOT NULL,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER,
    outcome     TEXT    NOT NULL DEFAULT 'running' CHECK (outcome IN ('running', 'ok', 'failed')),
    error       TEXT,
    tag_count   INTEGER,
    checksum    TEXT,
    added       TEXT    NOT NULL DEFAULT '[]',
    removed     TEXT    NOT NULL DEFAULT '[]',
    anomalies   TEXT    NOT NULL DEFAULT '[]',
    requests    INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX scans_by_repository ON scans (repository, id);
  CREATE INDEX scans_good ON scans (repository, image, outcome, id);

  -- Keyed by image too: observations of an image the repository no longer names do not carry over.
  CREATE TABLE tags (
    repository    TEXT    NOT NULL,
    image         TEXT    NOT NULL,
    tag           TEXT    NOT NULL,
    first_seen    INTEGER NOT NULL,
    last_seen     INTEGER NOT NULL,
    first_scan_id INTEGER NOT NULL,
    last_scan_id  INTEGER NOT NULL,
    initial       INTEGER NOT NULL,
    PRIMARY KEY (repository, image, tag)
  ) WITHOUT ROWID;
  CREATE INDEX tags_by_scan ON tags (repository, image, last_scan_id);

  CREATE TABLE tag_digests (
    repository TEXT    NOT NULL,
    tag        TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    PRIMARY KEY (repository, tag)
  ) WITHOUT ROWID;

  CREATE TABLE raw_responses (
    scan_id    INTEGER PRIMARY KEY REFERENCES scans (id) ON DELETE CASCADE,
    repository TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    truncated  INTEGER NOT NULL
  );
  CREATE INDEX raw_by_repository ON raw_responses (repository, scan_id);

  CREATE TABLE build_times (
    digest  TEXT PRIMARY KEY,
    created INTEGER,
    source  TEXT
  ) WITHOUT ROWID;

  CREATE TABLE policy_state (
    policy        TEXT PRIMARY KEY,
    spec_hash     TEXT NOT NULL,
    high_water    TEXT,
    high_water_at INTEGER,
    pending       TEXT
  ) WITHOUT ROWID;

  CREATE TABLE selections (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    policy    TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    candidate TEXT,
    error     TEXT
  );
  CREATE INDEX selections_by_policy ON selections (policy, id);

  CREATE TABLE runs (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    at       INTEGER NOT NULL,
    kind     TEXT    NOT NULL,
    ended_at INTEGER,
    result   TEXT
  );

  CREATE TABLE decisions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     INTEGER NOT NULL REFERENCES runs (id),
    automation TEXT    NOT NULL,
    file       TEXT    NOT NULL,
    line       INTEGER NOT NULL,
    setter     TEXT    NOT NULL,
    policy     TEXT    NOT NULL,
    current    TEXT    NOT NULL,
    candidate  TEXT,
    reason     TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    action     TEXT    NOT NULL CHECK (action IN ('write', 'keep'))
  );
  CREATE INDEX decisions_by_policy ON decisions (policy, id);
  CREATE INDEX decisions_by_run ON decisions (run_id, id);

  CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    policy     TEXT,
    repository TEXT,
    detail     TEXT    NOT NULL
  );
  CREATE INDEX events_by_at ON events (at);
  `,
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
];
