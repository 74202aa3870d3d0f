/** The PostgreSQL store's statements: many names as one array parameter (`ANY`, `unnest`), one round trip. */
export const SQL = {
  schemaVersion: 'SELECT max(version) AS v FROM store_migrations',
  // A scan still "running" long after any timeout was cut off by a crash or a kill, and is
  // marked so as the new one starts: one statement, so one round trip. prev_id is the
  // repository's newest scan (the history, ../schema.ts). The row is made from `held`'s, so its
  // id is drawn and the newest read once the repository's lock is held: a scan's predecessor is
  // always the one begun before it, even by another replica.
  beginScan: `WITH held AS (SELECT pg_advisory_xact_lock(hashtextextended('pawl:scan:' || $2::text, 0))),
     interrupted AS (
       UPDATE scans SET outcome = 'failed', ended_at = started_at, error = $1
       WHERE repository = $2 AND outcome = 'running' AND started_at < $4)
     INSERT INTO scans (repository, image, started_at, prev_id)
     SELECT $2, $3, $5, scan_heads_last($2) FROM held
     RETURNING id`,
  // One finisher per repository at a time: the comparison with the previous good scan must see
  // a settled list, as SQLite's single writer guarantees.
  lockRepository:
    "SELECT pg_advisory_xact_lock(hashtextextended('pawl:scan:' || repository, 0)) FROM scans WHERE id = $1",
  scanForUpdate: 'SELECT * FROM scans WHERE id = $1 FOR UPDATE',
  failScan:
    "UPDATE scans SET outcome = 'failed', ended_at = $1, error = $2, requests = $3 WHERE id = $4 RETURNING *",
  goodScan: `UPDATE scans SET outcome = 'ok', ended_at = $1, error = NULL, tag_count = $2, checksum = $3,
       added = $4, removed = $5, anomalies = $6, requests = $7, list_scan_id = $8 WHERE id = $9 RETURNING *`,
  moveTags: `UPDATE tags SET last_seen = $1, last_scan_id = $2
     WHERE repository = $3 AND image = $4 AND last_scan_id = $5 AND NOT (tag = ANY($6::text[]))`,
  // The rows a changed list leaves behind, when the previous good scan repeated its list scan's
  // tags: they were still listed at its start.
  seenRemoved: `UPDATE tags SET last_seen = $1
     WHERE repository = $2 AND image = $3 AND last_scan_id = $4 AND tag = ANY($5::text[])`,
  addTags: `INSERT INTO tags (repository, image, tag, first_seen, last_seen, first_scan_id, last_scan_id, initial)
     SELECT $1, $2, t, $3, $3, $4, $4, $5 FROM unnest($6::text[]) AS t
     ON CONFLICT (repository, image, tag) DO UPDATE SET last_seen = excluded.last_seen, last_scan_id = excluded.last_scan_id`,
  putRaw: `INSERT INTO raw_responses (scan_id, repository, body, truncated) VALUES ($1, $2, $3, $4)
     ON CONFLICT (scan_id) DO UPDATE SET body = excluded.body, truncated = excluded.truncated`,
  pruneRaw: `DELETE FROM raw_responses WHERE repository = $1 AND scan_id NOT IN
     (SELECT scan_id FROM raw_responses WHERE repository = $1 ORDER BY scan_id DESC LIMIT $2)`,
  // The previous good scan of the image (none: id null), and the tags of its list unless its
  // checksum is the new list's ($4: then nothing is compared or moved), and whether a good scan
  // that started later finished first (../finish.ts: superseded), in one round trip.
  // The image's newest good scan is the previous one unless it started later; then the previous
  // is found back through the history from this scan (a walk as long as the scans between).
  previousGood: `WITH RECURSIVE head AS (SELECT good_id FROM scan_heads WHERE repository = $1 AND image = $2),
     back (id) AS (
       SELECT prev_id FROM scans WHERE id = $3 AND (SELECT good_id FROM head) > $3
       UNION ALL
       SELECT s.prev_id FROM back JOIN scans s ON s.id = back.id WHERE NOT (s.outcome = 'ok' AND s.image = $2)),
     prev AS (
       SELECT id, started_at, checksum, coalesce(list_scan_id, id) AS list FROM scans
       WHERE id IN (SELECT good_id FROM head WHERE good_id < $3 UNION ALL SELECT id FROM back)
         AND outcome = 'ok' AND image = $2
       ORDER BY id DESC LIMIT 1),
     newer AS (SELECT coalesce((SELECT good_id FROM head) > $3, false) AS superseded)
     SELECT newer.superseded, prev.*, t.tag FROM newer
     LEFT JOIN prev ON true
     LEFT JOIN tags t ON t.repository = $1 AND t.image = $2 AND t.last_scan_id = prev.list
       AND prev.checksum IS DISTINCT FROM $4`,
  // A repository's heads: one row per image it was scanned as, the newest of each kind wins.
  knownRepositories: 'SELECT DISTINCT repository FROM scan_heads',
  lastScan: 'SELECT * FROM scans WHERE id = (SELECT max(last_id) FROM scan_heads WHERE repository = $1)',
  latestScans: `WITH h AS (
       SELECT repository, max(finished_id) AS finished_id, max(good_id) AS good_id FROM scan_heads
       WHERE repository = ANY($1::text[]) GROUP BY repository)
     SELECT 'finished' AS which, s.* FROM h JOIN scans s ON s.id = h.finished_id
     UNION ALL
     SELECT 'good' AS which, s.* FROM h JOIN scans s ON s.id = h.good_id`,
  // Back from the newest scan, one primary-key lookup a scan (../schema.ts).
  scanHistory: `WITH RECURSIVE back (id, n) AS (
       SELECT max(last_id), 1 FROM scan_heads WHERE repository = $1
       UNION ALL
       SELECT s.prev_id, back.n + 1 FROM back JOIN scans s ON s.id = back.id
       WHERE s.prev_id IS NOT NULL AND back.n < $2)
     SELECT s.* FROM back JOIN scans s ON s.id = back.id ORDER BY s.id DESC`,
  // Where each repository's current tags are (../current.ts): its latest good scan's list scan.
  currentLists: `SELECT h.repository, s.image, coalesce(s.list_scan_id, s.id) AS list, s.checksum FROM (
       SELECT repository, max(good_id) AS id FROM scan_heads
       WHERE repository = ANY($1::text[]) GROUP BY repository) h
     JOIN scans s ON s.id = h.id`,
  tagsOfLists: `SELECT t.repository, t.tag FROM unnest($1::text[], $2::text[], $3::bigint[]) AS l (repository, image, list)
     JOIN tags t ON t.repository = l.repository AND t.image = l.image AND t.last_scan_id = l.list`,
  // A current tag (a row of the latest good scan's list) was last seen at that scan's start.
  tagInfo: `WITH good AS (
       SELECT image, coalesce(list_scan_id, id) AS list, started_at FROM scans
       WHERE id = (SELECT max(good_id) FROM scan_heads WHERE repository = $1))
     SELECT t.tag, t.first_seen, CASE WHEN t.last_scan_id = g.list THEN g.started_at ELSE t.last_seen END AS last_seen,
       t.initial, d.digest FROM tags t
     JOIN good g ON t.image = g.image
     LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
     WHERE t.repository = $1 AND t.tag = $2`,
  tagInfos: `WITH good AS (
       SELECT image, coalesce(list_scan_id, id) AS list, started_at FROM scans
       WHERE id = (SELECT max(good_id) FROM scan_heads WHERE repository = $1))
     SELECT t.tag, t.first_seen, g.started_at AS last_seen, t.initial, d.digest FROM tags t
     JOIN good g ON t.image = g.image AND t.last_scan_id = g.list
     LEFT JOIN tag_digests d ON d.repository = t.repository AND d.tag = t.tag
     WHERE t.repository = $1`,
  rawResponses: `SELECT r.scan_id, r.body, r.truncated, s.started_at, s.outcome FROM raw_responses r
     JOIN scans s ON s.id = r.scan_id
     WHERE r.repository = $1 AND ($2::bigint IS NULL OR r.scan_id = $2) ORDER BY r.scan_id DESC`,
  getBuildTime: 'SELECT created, source FROM build_times WHERE digest = $1',
  setBuildTime: `INSERT INTO build_times (digest, created, source) VALUES ($1, $2, $3)
     ON CONFLICT (digest) DO UPDATE SET created = excluded.created, source = excluded.source`,
  getVerified: 'SELECT signer FROM verified_digests WHERE key = $1',
  setVerified: `INSERT INTO verified_digests (key, signer, at) VALUES ($1, $2, $3)
     ON CONFLICT (key) DO UPDATE SET signer = excluded.signer, at = excluded.at`,
  policyStates: 'SELECT * FROM policy_state WHERE policy = ANY($1::text[])',
  // Back from the policy's newest selection, one primary-key lookup a selection (../schema.ts).
  selectionHistory: `WITH RECURSIVE back (id, n) AS (
       SELECT last_id, 1 FROM selection_heads WHERE policy = $1
       UNION ALL
       SELECT s.prev_id, back.n + 1 FROM back JOIN selections s ON s.id = back.id
       WHERE s.prev_id IS NOT NULL AND back.n < $2)
     SELECT s.* FROM back JOIN selections s ON s.id = back.id ORDER BY s.id DESC`,
  latestSelections: `SELECT s.* FROM selection_heads h JOIN selections s ON s.id = h.last_id
     WHERE h.policy = ANY($1::text[])`,
  beginRun: 'INSERT INTO runs (at, kind) VALUES ($1, $2) RETURNING id',
  run: 'SELECT * FROM runs WHERE id = $1',
  decisions: `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM decisions d JOIN runs r ON r.id = d.run_id
     WHERE ($1::text IS NULL OR d.policy = $1) AND ($2::bigint IS NULL OR d.run_id = $2)
     ORDER BY d.id DESC LIMIT $3`,
  events: `SELECT * FROM events WHERE ($1::text IS NULL OR kind = $1) AND ($2::text IS NULL OR policy = $2)
       AND ($3::text IS NULL OR repository = $3) AND ($4::bigint IS NULL OR at >= $4)
     ORDER BY id DESC LIMIT $5`,
  latestEvents: `SELECT DISTINCT ON (policy) * FROM events WHERE kind = $1 AND policy = ANY($2::text[])
     ORDER BY policy, id DESC`,
  openBatches: 'SELECT * FROM commit_batches WHERE automation = ANY($1::text[])',
  openBatchesWrite: `INSERT INTO commit_batches (automation, opened_at)
     SELECT * FROM unnest($1::text[], $2::bigint[])
     ON CONFLICT (automation) DO UPDATE SET opened_at = excluded.opened_at`,
  closeBatches: 'DELETE FROM commit_batches WHERE automation = ANY($1::text[])',
  // The batch (write.ts): one statement per kind of record, arrays through `unnest`.
  setTagDigests: `INSERT INTO tag_digests (repository, tag, digest, at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
     ON CONFLICT (repository, tag) DO UPDATE SET digest = excluded.digest, at = excluded.at`,
  setPolicyStates: `INSERT INTO policy_state (policy, spec_hash, high_water, high_water_at, pending)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
     ON CONFLICT (policy) DO UPDATE SET spec_hash = excluded.spec_hash, high_water = excluded.high_water,
       high_water_at = excluded.high_water_at, pending = excluded.pending`,
  recordSelections: `INSERT INTO selections (policy, at, candidate, error, unverified)
     SELECT policy, at, candidate, error, unverified
     FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])
       WITH ORDINALITY AS x(policy, at, candidate, error, unverified, n)
     ORDER BY n`,
  recordDecisions: `INSERT INTO decisions (run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action)
     SELECT $1, automation, file, line, setter, policy, current, candidate, reason, detail, action
     FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
       WITH ORDINALITY AS x(automation, file, line, setter, policy, current, candidate, reason, detail, action, n)
     ORDER BY n`,
  recordEvents: `INSERT INTO events (at, kind, policy, repository, detail)
     SELECT at, kind, policy, repository, detail
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS x(at, kind, policy, repository, detail, n)
     ORDER BY n`,
  finishRun: `UPDATE runs SET ended_at = $1, result = $2, decisions_base = $3, decisions_first = $4,
       decisions_count = $5, decisions_excluded = $6 WHERE id = $7`,
  // Every batch that writes decisions takes this lock before them: a carried run's block of ids
  // (../carry.ts) is then never interleaved with another transaction's decision ids. Held to the
  // commit; also answers whether the run has stored decisions already (then not its whole list).
  lockDecisions: `SELECT pg_advisory_xact_lock(hashtextextended('pawl:decisions:' || current_schema(), 0)),
       EXISTS (SELECT 1 FROM decisions WHERE run_id = $1) AS earlier`,
  // A carried run's block: n ids after every one handed out, in one step under the lock.
  reserveDecisions: `SELECT setval(pg_get_serial_sequence('decisions', 'id'),
       nextval(pg_get_serial_sequence('decisions', 'id')) + $1 - 1) AS last`,
  recordDecisionsAt: `INSERT INTO decisions (id, run_id, automation, file, line, setter, policy, current, candidate, reason, detail, action)
     SELECT id, $1, automation, file, line, setter, policy, current, candidate, reason, detail, action
     FROM unnest($2::bigint[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
       AS x(id, automation, file, line, setter, policy, current, candidate, reason, detail, action)`,
  runResult: 'SELECT result FROM runs WHERE id = $1',
  // The bases of the newest runs that have decisions, newest first (../carry.ts, storedBase):
  // among the last 256 runs, so a store of runs without any stops early.
  recentBases: `SELECT DISTINCT coalesce(decisions_base, id) AS base FROM (
       SELECT id, decisions_base, decisions_count FROM runs ORDER BY id DESC LIMIT 256) r
     WHERE decisions_count IS NOT NULL ORDER BY base DESC LIMIT 8`,
  automationsOfRun: 'SELECT DISTINCT automation FROM decisions WHERE run_id = $1',
  carriedRun:
    'SELECT id, at, kind, decisions_base, decisions_first, decisions_count, decisions_excluded FROM runs WHERE id = $1',
  // Newest block first; with a policy, only runs whose base decided it.
  carriedRuns: `SELECT id, at, kind, decisions_base, decisions_first, decisions_count, decisions_excluded FROM runs
     WHERE decisions_base IS NOT NULL AND ($1::bigint IS NULL OR decisions_first < $1)
       AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM decisions b WHERE b.policy = $3 AND b.run_id = runs.decisions_base))
     ORDER BY decisions_first DESC LIMIT $2`,
  rowsOfRuns: `SELECT d.*, r.at AS run_at, r.kind AS run_kind FROM decisions d JOIN runs r ON r.id = d.run_id
     WHERE d.run_id = ANY($1::bigint[]) ORDER BY d.id`,
} as const;
