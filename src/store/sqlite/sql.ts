/**
 * The SQLite store's statements. Statements are cached by their text (open.ts), and `pluck()`
 * changes a statement's mode: each text here is used one way only.
 */
export const SQL = {
  // Every repository's at once, through scans_running (the running ones only); plucked.
  interruptScans: `UPDATE scans SET outcome = 'failed', ended_at = started_at, error = ?
     WHERE outcome = 'running' AND started_at < ? RETURNING repository`,
  // prev_id: the repository's newest scan, whatever its image (the history, ../schema.ts). The
  // write lock makes it exact: no other scan of the repository can begin in between.
  beginScan: `INSERT INTO scans (repository, image, started_at, prev_id)
     VALUES (?, ?, ?, (SELECT max(last_id) FROM scan_heads WHERE repository = ?))`,
  scan: 'SELECT * FROM scans WHERE id = ?',
  // A scan to finish, with the image's newest good scan (its id, and its row when it began
  // before this one: the previous good scan, ../finish.ts): one statement, where it was three.
  finishing: `SELECT s.*, h.good_id AS head_good_id, p.id AS head_id, p.started_at AS head_started_at,
       p.checksum AS head_checksum, p.list_scan_id AS head_list_scan_id
     FROM scans s
     LEFT JOIN scan_heads h ON h.repository = s.repository AND h.image = s.image
     LEFT JOIN scans p ON p.id = h.good_id AND h.good_id < s.id
     WHERE s.id = ?`,
  failScan: "UPDATE scans SET outcome = 'failed', ended_at = ?, error = ?, requests = ? WHERE id = ?",
  goodScan: `UPDATE scans SET outcome = 'ok', ended_at = ?, error = NULL, tag_count = ?, checksum = ?,
       added = ?, removed = ?, anomalies = ?, requests = ?, list_scan_id = ? WHERE id = ?`,
  moveTags: `UPDATE tags SET last_seen = ?, last_scan_id = ?
     WHERE repository = ? AND image = ? AND last_scan_id = ? AND tag NOT IN (SELECT value FROM json_each(?))`,
  // The rows a changed list leaves behind, when the previous good scan repeated its list scan's
  // tags: they were still listed at its start.
  seenRemoved: `UPDATE tags SET last_seen = ?
     WHERE repository = ? AND image = ? AND last_scan_id = ? AND tag IN (SELECT value FROM json_each(?))`,
  addTags: `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial)
     SELECT ?, ?, value, ?, ?, ?, ?, ? FROM json_each(?) WHERE true
     ON CONFLICT (repository, image, tag) DO UPDATE SET last_seen = excluded.last_seen, last_scan_id = excluded.last_scan_id`,
  putRaw: 'INSERT OR REPLACE INTO raw_responses (scan_id, repository, body, truncated) VALUES (?, ?, ?, ?)',
  // The newest `kept` of each repository (a JSON list) stay: everything from the one after them
  // down (a seek in raw_by_repository, where NOT IN built the kept list and walked every row).
  pruneRaw: `DELETE FROM raw_responses WHERE scan_id IN (
       SELECT r.scan_id FROM json_each(?) j JOIN raw_responses r ON r.repository = j.value
       WHERE r.scan_id <= (SELECT k.scan_id FROM raw_responses k WHERE k.repository = j.value
         ORDER BY k.scan_id DESC LIMIT 1 OFFSET ?))`,
  // The previous good scan of the image when a later one is the head: back through the history
  // from the scan, to the first good one of the image (a walk only as long as the scans between).
  // CROSS JOIN: SQLite then reads the walk's ids first, where a plain join chose to scan every
  // scan and probe the walk.
  previousGoodBack: `WITH RECURSIVE back (id) AS (
       SELECT prev_id FROM scans WHERE id = @id
       UNION ALL
       SELECT s.prev_id FROM back JOIN scans s ON s.id = back.id
       WHERE NOT (s.outcome = 'ok' AND s.image = @image))
     SELECT s.id, s.started_at, s.checksum, s.list_scan_id FROM back CROSS JOIN scans s ON s.id = back.id
     WHERE s.outcome = 'ok' AND s.image = @image`,
  /** Plucked. */
  tagsOfScan: 'SELECT tag FROM tags WHERE repository = ? AND image = ? AND last_scan_id = ?',
  // A repository's heads: one row per image it was scanned as, the newest of each kind wins.
  lastScan: 'SELECT * FROM scans WHERE id = (SELECT max(last_id) FROM scan_heads WHERE repository = ?)',
  lastGood: 'SELECT * FROM scans WHERE id = (SELECT max(good_id) FROM scan_heads WHERE repository = ?)',
  /** Plucked. */
  knownRepositories: 'SELECT DISTINCT repository FROM scan_heads ORDER BY repository',
  // One statement for the whole list: a pass asks for 500 repositories at once, and a call
  // into SQLite costs more than the index lookups it makes.
  latestScans: `WITH wanted AS (
       SELECT value AS name,
         (SELECT max(finished_id) FROM scan_heads WHERE repository = value) AS finished_id,
         (SELECT max(good_id) FROM scan_heads WHERE repository = value) AS good_id
       FROM json_each(?))
     SELECT wanted.name, wanted.finished_id, wanted.good_id, s.* FROM wanted
     JOIN scans s ON s.id = wanted.finished_id OR s.id = wanted.good_id`,
  /** Changes when another connection commits (https://sqlite.org/pragma.html#pragma_data_version). */
  dataVersion: 'PRAGMA data_version',
  // Back from the newest scan, one primary-key lookup a scan (../schema.ts).
  scanHistory: `WITH RECURSIVE back (id, n) AS (
       SELECT max(last_id), 1 FROM scan_heads WHERE repository = @repository
       UNION ALL
       SELECT s.prev_id, back.n + 1 FROM back JOIN scans s ON s.id = back.id
       WHERE s.prev_id IS NOT NULL AND back.n < @limit)
     SELECT s.* FROM back CROSS JOIN scans s ON s.id = back.id ORDER BY s.id DESC`,
  // Where each repository's current tags are (current.ts): its latest good scan's list scan.
  currentLists: `WITH good AS (
       SELECT value AS name, (SELECT max(good_id) FROM scan_heads WHERE repository = value) AS id
       FROM json_each(?))
     SELECT good.name AS repository, s.image, coalesce(s.list_scan_id, s.id) AS list, s.checksum FROM good
     JOIN scans s ON s.id = good.id`,
  // A current tag (a row of the latest good scan's list) was last seen at that scan's start.
  tagInfo: `SELECT t.tag, t.first_seen, CASE WHEN t.last_scan_id = ? THEN ? ELSE t.last_seen END AS last_seen,
       t.initial, d.digest FROM tags t
     LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
     WHERE t.repository = ? AND t.image = ? AND t.tag = ?`,
  tagInfos: `SELECT t.tag, t.first_seen, ? AS last_seen, t.initial, d.digest FROM tags t
     LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
     WHERE t.repository = ? AND t.image = ? AND t.last_scan_id = ?`,
  rawResponses: `SELECT r.scan_id, r.body, r.truncated, s.started_at, s.outcome FROM raw_responses r
     JOIN scans s ON s.id = r.scan_id
     WHERE r.repository = ? AND (? IS NULL OR r.scan_id = ?) ORDER BY r.scan_id DESC`,
  setTagDigest: `INSERT INTO tag_digests (repository, tag, digest, at) VALUES (?, ?, ?, ?)
     ON CONFLICT (repository, tag) DO UPDATE SET digest = excluded.digest, at = excluded.at`,
  getBuildTime: 'SELECT created, source FROM build_times WHERE digest = ?',
  setBuildTime: 'INSERT OR REPLACE INTO build_times (digest, created, source) VALUES (?, ?, ?)',
  getVerified: 'SELECT signer FROM verified_digests WHERE key = ?',
  setVerified: 'INSERT OR REPLACE INTO verified_digests (key, signer, at) VALUES (?, ?, ?)',
  policyStates: 'SELECT p.* FROM json_each(?) j JOIN policy_state p ON p.policy = j.value',
  setPolicyState: `INSERT INTO policy_state (policy, spec_hash, high_water, high_water_at, pending) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (policy) DO UPDATE SET spec_hash = excluded.spec_hash, high_water = excluded.high_water,
       high_water_at = excluded.high_water_at, pending = excluded.pending`,
  recordSelection: `INSERT INTO selections (policy, at, candidate, error, unverified, prev_id)
     VALUES (?, ?, ?, ?, ?, (SELECT last_id FROM selection_heads WHERE policy = ?))`,
  moveSelectionHead: `INSERT INTO selection_heads (policy, last_id) VALUES (?, ?)
     ON CONFLICT (policy) DO UPDATE SET last_id = excluded.last_id`,
  // Back from the policy's newest selection, one primary-key lookup a selection (../schema.ts).
  selectionHistory: `WITH RECURSIVE back (id, n) AS (
       SELECT last_id, 1 FROM selection_heads WHERE policy = @policy
       UNION ALL
       SELECT s.prev_id, back.n + 1 FROM back JOIN selections s ON s.id = back.id
       WHERE s.prev_id IS NOT NULL AND back.n < @limit)
     SELECT s.* FROM back CROSS JOIN selections s ON s.id = back.id ORDER BY s.id DESC`,
  latestSelections: `SELECT s.* FROM json_each(?) j JOIN selection_heads h ON h.policy = j.value
     CROSS JOIN selections s ON s.id = h.last_id`,
  beginRun: 'INSERT INTO runs (at, kind) VALUES (?, ?)',
  recordDecision: `INSERT INTO decisions (run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // A carried decision's own row: its id is its place in the run's block (../carry.ts).
  recordDecisionAt: `INSERT INTO decisions (id, run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  /** Plucked. Whether a run has stored decisions (a batch with its end is then not its whole list). */
  hasDecisions: 'SELECT 1 FROM decisions WHERE run_id = ? LIMIT 1',
  /** Plucked. The last decision id handed out (AUTOINCREMENT's counter, carried blocks included). */
  decisionSeq: "SELECT seq FROM sqlite_sequence WHERE name = 'decisions'",
  // A carried block's ids are taken: AUTOINCREMENT never hands them out (sqlite_sequence is
  // ordinary rows; the block's own rows already moved it, this moves it to the block's end).
  reserveDecisions: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'decisions'",
  finishRun: `UPDATE runs SET ended_at = ?, result = ?, decisions_base = ?, decisions_first = ?,
       decisions_count = ?, decisions_excluded = ? WHERE id = ?`,
  runResult: 'SELECT result FROM runs WHERE id = ?',
  // The bases of the newest runs that have decisions, newest first (../carry.ts, storedBase):
  // among the last 256 runs, so a store of runs without any stops early.
  recentBases: `SELECT DISTINCT coalesce(decisions_base, id) AS base FROM (
       SELECT id, decisions_base, decisions_count FROM runs ORDER BY id DESC LIMIT 256)
     WHERE decisions_count IS NOT NULL ORDER BY base DESC LIMIT 8`,
  /** Plucked. */
  automationsOfRun: 'SELECT DISTINCT automation FROM decisions WHERE run_id = ?',
  carriedRun:
    'SELECT id, at, kind, decisions_base, decisions_first, decisions_count, decisions_excluded FROM runs WHERE id = ?',
  // Newest block first, in runs_carried; with a policy, only runs whose base decided it (a run
  // carries nothing else of it: its own rows are read with every stored row).
  carriedRuns: `SELECT id, at, kind, decisions_base, decisions_first, decisions_count, decisions_excluded FROM runs
     WHERE decisions_base IS NOT NULL AND (@below IS NULL OR decisions_first < @below)
       AND (@policy IS NULL OR EXISTS (SELECT 1 FROM decisions b WHERE b.policy = @policy AND b.run_id = runs.decisions_base))
     ORDER BY decisions_first DESC LIMIT @limit`,
  rowsOfRuns: `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM json_each(?) j
     JOIN decisions d ON d.run_id = j.value JOIN runs r ON r.id = d.run_id ORDER BY d.id`,
  run: 'SELECT * FROM runs WHERE id = ?',
  decisions: `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM decisions d JOIN runs r ON r.id = d.run_id
     WHERE (@policy IS NULL OR d.policy = @policy) AND (@runId IS NULL OR d.run_id = @runId)
     ORDER BY d.id DESC LIMIT @limit`,
  openBatches: 'SELECT b.* FROM json_each(?) j JOIN commit_batches b ON b.automation = j.value',
  openBatch: 'INSERT OR REPLACE INTO commit_batches (automation, opened_at) VALUES (?, ?)',
  closeBatch: 'DELETE FROM commit_batches WHERE automation = ?',
  recordEvent: 'INSERT INTO events (at, kind, policy, repository, detail) VALUES (?, ?, ?, ?, ?)',
  events: `SELECT * FROM events WHERE (@kind IS NULL OR kind = @kind) AND (@policy IS NULL OR policy = @policy)
       AND (@repository IS NULL OR repository = @repository) AND (@since IS NULL OR at >= @since)
     ORDER BY id DESC LIMIT @limit`,
} as const;
