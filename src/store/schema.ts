/**
 * The store's schema, written once for both backends: only the column types differ (SQLite's
 * INTEGER is PostgreSQL's BIGINT, both holding milliseconds and ids), so the two cannot drift and
 * share their row conversions (rows.ts). Each backend's migrations (sqlite/migrations.ts,
 * postgres/migrations.ts) are versions of it; append new versions, never edit a released one.
 */
import { RuntimeError } from '../util/index.js';

/** What a backend calls the column types of the schema. */
export interface Dialect {
  /** An id the database assigns. */
  id: string;
  /** Times (ms since the epoch) and the ids that point at rows. */
  big: string;
  /** A 0/1 flag. */
  flag: string;
  /** After a table looked up only by its primary key. */
  keyed: string;
  /** Indexes only this backend has. */
  indexes: string;
}

/** Version 1: scans, tags, raw responses, digests, build times, policies, runs, decisions, events. */
export function schemaV1(d: Dialect): string {
  return `
  CREATE TABLE scans (
    id          ${d.id},
    repository  TEXT    NOT NULL,
    image       TEXT    NOT NULL,
    started_at  ${d.big} NOT NULL,
    ended_at    ${d.big},
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
    first_seen    ${d.big} NOT NULL,
    last_seen     ${d.big} NOT NULL,
    first_scan_id ${d.big} NOT NULL,
    last_scan_id  ${d.big} NOT NULL,
    initial       ${d.flag} NOT NULL,
    PRIMARY KEY (repository, image, tag)
  )${d.keyed};
  CREATE INDEX tags_by_scan ON tags (repository, image, last_scan_id);

  CREATE TABLE tag_digests (
    repository TEXT    NOT NULL,
    tag        TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    at         ${d.big} NOT NULL,
    PRIMARY KEY (repository, tag)
  )${d.keyed};

  CREATE TABLE raw_responses (
    scan_id    ${d.big} PRIMARY KEY REFERENCES scans (id) ON DELETE CASCADE,
    repository TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    truncated  ${d.flag} NOT NULL
  );
  CREATE INDEX raw_by_repository ON raw_responses (repository, scan_id);

  CREATE TABLE build_times (
    digest  TEXT PRIMARY KEY,
    created ${d.big},
    source  TEXT
  )${d.keyed};

  CREATE TABLE policy_state (
    policy        TEXT PRIMARY KEY,
    spec_hash     TEXT NOT NULL,
    high_water    TEXT,
    high_water_at ${d.big},
    pending       TEXT
  )${d.keyed};

  CREATE TABLE selections (
    id        ${d.id},
    policy    TEXT    NOT NULL,
    at        ${d.big} NOT NULL,
    candidate TEXT,
    error     TEXT
  );
  CREATE INDEX selections_by_policy ON selections (policy, id);

  CREATE TABLE runs (
    id       ${d.id},
    at       ${d.big} NOT NULL,
    kind     TEXT    NOT NULL,
    ended_at ${d.big},
    result   TEXT
  );

  CREATE TABLE decisions (
    id         ${d.id},
    run_id     ${d.big} NOT NULL REFERENCES runs (id),
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
    id         ${d.id},
    at         ${d.big} NOT NULL,
    kind       TEXT    NOT NULL,
    policy     TEXT,
    repository TEXT,
    detail     TEXT    NOT NULL
  );
  CREATE INDEX events_by_at ON events (at);
  ${d.indexes}
  `;
}

/** `prev_id` on `table`: each row's link to the one before it with the same `key`, filled for the rows there. */
function linkedBack(table: string, key: string, d: Pick<Dialect, 'big'>): string {
  return `
  ALTER TABLE ${table} ADD COLUMN prev_id ${d.big};
  UPDATE ${table} SET prev_id = back.prev_id
    FROM (SELECT id, lag(id) OVER (PARTITION BY ${key} ORDER BY id) AS prev_id FROM ${table}) AS back
    WHERE back.id = ${table}.id AND back.prev_id IS NOT NULL;`;
}

/**
 * Each repository's newest scans, and a link from each scan to the one before it. A pass rescans
 * every repository; an index keyed by (repository, id) then takes one new entry a repository, on
 * the page holding that repository's entries, and once a store has a history each lands on a page
 * of its own: a pass over 500 unchanged lists wrote 19.5 MB after 1,000 passes, against 0.4 MB on
 * a new store (docs/performance.md, "what a pass writes once the store has a history"). So the
 * scans table has no such index: `scan_heads` holds one row per (repository, image), updated in
 * place — the newest scan, the newest finished one and the newest good one — and a repository's
 * history is walked back from its newest scan through `prev_id`, by primary key. Both are kept
 * by the database (each backend's triggers and its `beginScan`), filled here for the scans an
 * older pawl recorded. The old indexes are dropped by each backend's step after the fill, which
 * reads them.
 */
export function scanHeads(d: Pick<Dialect, 'big' | 'keyed'>): string {
  return `${linkedBack('scans', 'repository', d)}
  CREATE TABLE scan_heads (
    repository  TEXT    NOT NULL,
    image       TEXT    NOT NULL,
    last_id     ${d.big} NOT NULL,
    finished_id ${d.big},
    good_id     ${d.big},
    PRIMARY KEY (repository, image)
  )${d.keyed};
  INSERT INTO scan_heads (repository, image, last_id, finished_id, good_id)
    SELECT repository, image, max(id),
      max(CASE WHEN outcome <> 'running' THEN id END), max(CASE WHEN outcome = 'ok' THEN id END)
    FROM scans GROUP BY repository, image;
  `;
}

/**
 * Each policy's newest selection, and a link from each selection to the one before it: the same
 * as `scanHeads`, for `selections_by_policy`, which took a page a policy a pass once a store had
 * a history (a one-shot `pawl run` records a selection for every policy). `selection_heads` holds
 * the last selection linked, which each backend keeps (SQLite's `recordSelection` and
 * `moveSelectionHead`, PostgreSQL's trigger); filled here for older stores, whose index the backend's step drops.
 */
export function selectionHeads(d: Pick<Dialect, 'big' | 'keyed'>): string {
  return `${linkedBack('selections', 'policy', d)}
  CREATE TABLE selection_heads (
    policy  TEXT    PRIMARY KEY,
    last_id ${d.big} NOT NULL
  )${d.keyed};
  INSERT INTO selection_heads (policy, last_id) SELECT policy, max(id) FROM selections GROUP BY policy;
  `;
}

/**
 * The steps after version `current` (version N is `steps[N-1]`), for either backend's runner.
 * A schema newer than `steps` was migrated by a newer pawl: it is refused, nothing changed.
 */
export function pendingSteps(
  current: number,
  steps: readonly string[],
  refusal: { subject: string; advice: string },
): { version: number; sql: string }[] {
  if (current > steps.length)
    throw new RuntimeError(
      `${refusal.subject} ${current}, newer than this pawl understands (${steps.length}); ${refusal.advice}`,
    );
  return steps.slice(current).map((sql, i) => ({ version: current + i + 1, sql }));
}
