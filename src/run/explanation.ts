/**
 * What `pawl explain POLICY --json` answers, and the dashboard's policy page reads
 * (`/api/v1/policies/{ns}/{name}/explain`, docs/api.md). It imports nothing: web/types.ts reads it,
 * and web/ type-checks with the browser's lib every file it reaches.
 */
export interface Explanation {
  policy: string;
  repository: string;
  image: string;
  strategy: string;
  selected: string | null;
  candidate: string | null;
  error: string | null;
  /** `spec.verify`: the newest selected tag when it failed verification, and why. */
  unverified: { tag: string; why: string } | null;
  counts: {
    tags: number;
    excluded: number;
    filteredOut: number;
    unparsable: number;
    outOfRange: number;
  } | null;
  candidates: { rank: number; tag: string; extracted: string; key: string }[];
  highWater: string | null;
  highWaterAt: string | null;
  pending: { candidate: string; count: number; firstAt: string; lastAt: string } | null;
  ratchet: string;
  scans: {
    at: string;
    outcome: string;
    tags: number | null;
    added: number;
    removed: number;
    anomalies: string[];
    error: string | null;
  }[];
  markers: {
    automation: string;
    file: string;
    line: number;
    setter: string;
    value: string;
    action: 'write' | 'keep';
    reason: string;
    words: string;
    detail: string;
    advice: string | null;
    pin: {
      state: string;
      detail: string;
      commit?: string;
      author?: string;
      time?: string;
      previous?: string;
      kind?: string;
      /** A rollback's `Pawl-Reason` (`--reason`). */
      reason?: string;
    } | null;
  }[];
  automationErrors: { automation: string; error: string }[];
  /**
   * Each automation's pull request (spec.git.push.pullRequest) as its last pass reported it, and
   * its open commit batch (spec.git.commit.batch); only automations with either configured.
   */
  proposals: Proposal[];
  events: { at: string; kind: string; detail: Record<string, unknown> }[];
  /**
   * The newest candidate older than every marked line's value (what "roll back" means), or null
   * when no candidate is known to be older.
   */
  rollbackTo: string | null;
  /** The commands to act on this policy, spelled to run as printed where they are offered. */
  commands: { rollback: string; release: string; explain: string };
}

/** One automation's proposal state in an explanation (src/run/proposals.ts reads it from the store). */
export interface Proposal {
  automation: string;
  /** As the last pass that proposed (or found nothing to propose) reported it; null: none open. */
  pullRequest: {
    number: number;
    url: string;
    state: 'open' | 'closed' | 'merged';
    action: 'opened' | 'updated' | 'unchanged';
    at: string;
  } | null;
  /** The open commit batch: when it opened and when its write is due (RFC 3339); null: none. */
  batch: { openedAt: string; writesAt: string } | null;
}
