/** Text for people: shared by `pawl scan`, `pawl tags` and (later) `pawl run`. */
import type { Anomaly } from '../records/index.js';
import { abbreviate } from './diff.js';
import type { RecordedResponse } from './registry/types.js';

/** `2026-03-01 12:00:05Z`: sortable, unambiguous, and short enough for a table. */
export function formatTime(d: Date | null): string {
  if (d === null) return '-';
  return d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, 'Z');
}

export function anomalyKinds(anomalies: readonly Anomaly[]): string {
  return anomalies.length === 0
    ? ''
    : anomalies
        .map((a) =>
          a.kind === 'count-drop'
            ? `count-drop (${a.from}→${a.to})`
            : a.kind === 'tags-missing' || a.kind === 'invalid-tags'
              ? `${a.kind} (${a.count})`
              : a.kind,
        )
        .join(', ');
}

/** Names with a leading `+`/`-`, cut after `max`. */
export function changeList(sign: '+' | '-', names: readonly string[], max = 10): string {
  if (names.length === 0) return '';
  return `${sign}${names.length}: ${abbreviate(names, max)}`;
}

export function formatResponse(r: RecordedResponse): string {
  const head = `${r.method} ${r.url} → ${r.status} (${r.durationMs} ms, ${r.at})`;
  const headers = Object.entries(r.headers).map(([k, v]) => `  ${k}: ${v}`);
  const text = r.body.replace(/\s+$/, '');
  const body = text === '' ? [] : ['', ...text.split('\n').map((l) => `  ${l}`.trimEnd())];
  return [head, ...headers, ...body].join('\n');
}
