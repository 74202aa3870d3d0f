/**
 * The shapes the page reads, from their one definition: the server's (docs/dashboard.md,
 * docs/api.md). Types only, from files that import nothing of src/ beyond records/' types: the
 * bundle keeps none of it, and web/'s type check (the browser's lib) reads only those files.
 */
import type { MarkerState } from '../src/serve/dashboard/json.js';

export type { MarkerState, Overview, Timeline } from '../src/serve/dashboard/json.js';
export type { Explanation } from '../src/run/explanation.js';

export const STATE_LABELS: Record<MarkerState, string> = {
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

export const STATE_ORDER: MarkerState[] = [
  'error',
  'candidate-missing',
  'unverified',
  'stale',
  'downgrade-blocked',
  'pinned',
  'held',
  'upgrade',
  'up-to-date',
];
