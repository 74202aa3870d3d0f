/** The shapes the dashboard's JSON has (docs/dashboard.md, docs/api.md), and what it reads them from. */
import type { Config } from '../../config/index.js';
import type { Store } from '../../store/index.js';
import type { Problem } from '../../util/index.js';
import type { LastPass } from '../events.js';
import type { MarkerState } from './json.js';

/** The JSON's shapes live apart, where web/ can read them (json.ts). */
export * from './json.js';

export const STATE_LABELS: Readonly<Record<MarkerState, string>> = {
  error: 'error',
  'candidate-missing': 'candidate missing',
  unverified: 'unverified',
  stale: 'stale registry',
  'downgrade-blocked': 'downgrade blocked',
  pinned: 'pinned',
  held: 'held by a gate',
  upgrade: 'upgrade written',
  'up-to-date': 'up to date',
};

/** Where a commit can be opened in a browser, for the forges whose URL layout is known. */
export function forgeCommitUrl(gitUrl: string, sha: string): string | null {
  if (!/^[0-9a-f]{7,64}$/i.test(sha)) return null;
  let host: string;
  let path: string;
  const scp = /^(?:[\w.-]+@)?([\w.-]+):(?!\/\/)([^\s]+)$/.exec(gitUrl);
  if (scp && !/^[a-z][\w+.-]*:\/\//i.test(gitUrl)) {
    host = scp[1]!;
    path = scp[2]!;
  } else {
    let u: URL;
    try {
      u = new URL(gitUrl);
    } catch {
      return null;
    }
    if (!['https:', 'http:', 'ssh:', 'git:'].includes(u.protocol)) return null;
    host = u.hostname;
    path = u.pathname;
  }
  host = host.toLowerCase();
  path = path
    .replace(/^\/+/, '')
    .replace(/\.git\/?$/, '')
    .replace(/\/+$/, '');
  if (!/^[\w.-]+(\/[\w.-]+)+$/.test(path)) return null;
  const base = `https://${host}/${path}`;
  if (host === 'github.com' || host.startsWith('github.')) return `${base}/commit/${sha}`;
  if (host === 'gitlab.com' || host.startsWith('gitlab.')) return `${base}/-/commit/${sha}`;
  if (host === 'bitbucket.org') return `${base}/commits/${sha}`;
  if (
    host === 'codeberg.org' ||
    host === 'gitea.com' ||
    host.startsWith('gitea.') ||
    host.startsWith('forgejo.')
  )
    return `${base}/commit/${sha}`;
  return null;
}

/** The store as the dashboard reads it: batch reads of every policy, and each one's history. */
export type DashboardStore = Pick<
  Store,
  | 'policyStates'
  | 'latestSelections'
  | 'latestEvents'
  | 'latestScans'
  | 'decisions'
  | 'getRun'
  | 'scanHistory'
  | 'selectionHistory'
>;

export interface DashboardSource {
  config: Config;
  store: DashboardStore;
  dryRun: boolean;
  lastPass: ReadonlyMap<string, LastPass>;
  repositoriesOf: ReadonlyMap<string, string[]>;
  /**
   * The configuration's problems: the errors of the running one (objects skipped), or — when
   * the last reload was refused — why, while the one before keeps running.
   */
  configuration?: { refused: boolean; at: Date; problems: readonly Problem[] };
  /** The daemon's `-c` paths: where an empty configuration was looked for. */
  configPaths?: readonly string[];
  now: Date;
}

/** The part of a stored run's result the dashboard reads: its commits. */
export interface RunResultShape {
  automations?: { name?: unknown; commit?: unknown; result?: unknown }[];
  commit?: unknown;
}

/** A time as the JSON carries it. */
export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
