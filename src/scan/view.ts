/**
 * The JSON of a repository's current tags, one shape for `pawl tags --json` and the admin API's
 * `/api/v1/repositories/:namespace/:name/tags` (docs/api.md), so the two cannot drift apart.
 */
import type { ScanRecord, TagInfo } from '../records/index.js';

/**
 * `good` is the last good scan, whose tags `infos` are; `last` is the last scan of any outcome,
 * shown only when it is not the good one (a failed or unfinished scan since).
 */
export function tagsView(
  name: string,
  good: ScanRecord,
  last: ScanRecord | null,
  infos: readonly ({ tag: string } & TagInfo)[],
) {
  return {
    name,
    image: good.image,
    scan: { id: good.id, startedAt: good.startedAt, checksum: good.checksum, anomalies: good.anomalies },
    lastScan:
      last && last.id !== good.id
        ? { id: last.id, startedAt: last.startedAt, outcome: last.outcome, error: last.error }
        : null,
    tags: infos.map((i) => ({
      tag: i.tag,
      firstSeen: i.firstSeen,
      lastSeen: i.lastSeen,
      digest: i.digest,
      initial: i.initial,
    })),
  };
}
