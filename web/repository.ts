import uPlot from 'uplot';
import { h, time, when } from './dom.js';
import { policyLink } from './overview.js';
import type { Timeline } from './types.js';

const css = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
const secs = (iso: string) => new Date(iso).getTime() / 1000;

/** Charts being shown, resized with the window and destroyed when the view changes. */
let charts: uPlot[] = [];
export function destroyCharts(): void {
  for (const c of charts) c.destroy();
  charts = [];
}
window.addEventListener('resize', () => {
  for (const c of charts) {
    const w = c.root.parentElement?.clientWidth;
    if (w) c.setSize({ width: w, height: c.height });
  }
});

function axis(label?: string): uPlot.Axis {
  return {
    stroke: css('--muted'),
    grid: { stroke: css('--grid'), width: 1 },
    ticks: { stroke: css('--grid'), width: 1 },
    ...(label ? { label, labelSize: 18 } : {}),
  };
}

const pointsOnly = (color: string, size: number): Partial<uPlot.Series> => ({
  stroke: color,
  fill: color,
  paths: () => null,
  points: { show: true, size, stroke: color, fill: color },
});

/** Both charts share the time axis; equal y-axis widths keep their times in line. */
const yAxisSize = (width: number) => (width < 600 ? 96 : 200);

/** A tag short enough for the y axis: its start and its end. */
function shortTag(tag: string, max: number): string {
  if (tag.length <= max) return tag;
  const keep = Math.max(2, Math.floor((max - 1) / 2));
  return `${tag.slice(0, keep)}…${tag.slice(-keep)}`;
}

function countChart(t: Timeline, range: [number, number], width: number): HTMLElement {
  const xs = t.scans.map((s) => secs(s.at));
  let last: number | null = null;
  const count: (number | null)[] = [];
  const failed: (number | null)[] = [];
  const anomalous: (number | null)[] = [];
  for (const s of t.scans) {
    count.push(s.tags);
    if (s.tags !== null) last = s.tags;
    failed.push(s.outcome === 'failed' ? (last ?? 0) : null);
    anomalous.push(s.anomalies.length > 0 ? s.tags : null);
  }
  const el = h('div', { class: 'chart', 'aria-hidden': 'true' });
  const opts: uPlot.Options = {
    width,
    height: 220,
    cursor: { sync: { key: 'pawl' }, drag: { x: false, y: false } },
    legend: { live: true },
    scales: {
      x: { time: true, range: () => range },
      y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] },
    },
    axes: [axis(), { ...axis(), size: yAxisSize(width) }],
    series: [
      { value: (_u, v) => (v === null ? '—' : when(new Date(v * 1000).toISOString())) },
      {
        label: 'tags listed',
        stroke: css('--accent'),
        width: 2,
        fill: css('--accent-soft'),
        spanGaps: true,
        // The count holds until the next scan.
        paths: uPlot.paths.stepped!({ align: 1 }),
        points: { show: true, size: 5 },
      },
      { label: 'anomaly', ...pointsOnly(css('--warn'), 11) },
      { label: 'scan failed', ...pointsOnly(css('--bad'), 11) },
    ],
  };
  charts.push(new uPlot(opts, [xs, count, anomalous, failed], el));
  return el;
}

function selectionChart(
  p: Timeline['policies'][number],
  range: [number, number],
  width: number,
): HTMLElement {
  const xs = p.selections.map((s) => secs(s.at));
  const ord = (tag: string | null) => (tag === null ? null : p.tags.indexOf(tag));
  const selected = p.selections.map((s) => ord(s.candidate));
  const hw = ord(p.highWater);
  const high = p.selections.map(() => hw);
  const none = p.selections.map((s) => (s.candidate === null ? -0.5 : null));
  const el = h('div', { class: 'chart', 'aria-hidden': 'true' });
  const opts: uPlot.Options = {
    width,
    height: Math.max(120, 44 + 26 * p.tags.length),
    cursor: { sync: { key: 'pawl' }, drag: { x: false, y: false } },
    scales: {
      x: { time: true, range: () => range },
      y: { range: () => [-0.8, Math.max(0.8, p.tags.length - 0.2)] },
    },
    axes: [
      axis(),
      {
        ...axis(),
        size: yAxisSize(width),
        splits: () => p.tags.map((_t, i) => i),
        values: (_u, splits) => splits.map((i) => shortTag(p.tags[i] ?? '', width < 600 ? 11 : 30)),
      },
    ],
    series: [
      { value: (_u, v) => (v === null ? '—' : when(new Date(v * 1000).toISOString())) },
      {
        label: 'selected',
        stroke: css('--good'),
        width: 2,
        paths: uPlot.paths.stepped!({ align: 1 }),
        points: { show: true, size: 6 },
        value: (_u, v) => (v === null ? '—' : (p.tags[v] ?? '')),
      },
      {
        label: 'high-water mark (now)',
        stroke: css('--muted'),
        dash: [6, 4],
        width: 1.5,
        points: { show: false },
        value: (_u, v) => (v === null ? '—' : (p.tags[v] ?? '')),
      },
      { label: 'no candidate', ...pointsOnly(css('--bad'), 9), value: (_u, v) => (v === null ? '' : 'none') },
    ],
  };
  charts.push(new uPlot(opts, [xs, selected, high, none], el));
  return el;
}

export function renderRepository(t: Timeline): HTMLElement {
  destroyCharts();
  const all = [
    ...t.scans.map((s) => secs(s.at)),
    ...t.policies.flatMap((p) => p.selections.map((s) => secs(s.at))),
  ];
  const min = Math.min(...all);
  const max = Math.max(...all);
  const pad = Math.max(5, (max - min) * 0.03);
  const range: [number, number] = all.length ? [min - pad, max + pad] : [0, 1];
  const failed = t.scans.filter((s) => s.outcome === 'failed').length;
  const odd = t.scans.filter((s) => s.anomalies.length > 0).length;
  const main = h('div', { class: 'view repository' });
  const width = Math.max(280, Math.min(1180, (document.querySelector('main')?.clientWidth ?? 1000) - 48));
  main.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / image repository'),
    h('h1', {}, t.name),
    h('p', { class: 'lede mono muted' }, t.image),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'tl' },
      h('h2', { id: 'tl' }, 'Scans over time'),
      h(
        'p',
        { class: 'muted', 'data-summary': '' },
        `${t.scans.length} scans shown; ${failed} failed; ${odd} with anomalies (empty list, tags missing, count drop). The table below has every value.`,
      ),
      t.scans.length ? countChart(t, range, width) : h('p', {}, 'No scans yet.'),
      t.policies.map((p) =>
        h(
          'div',
          { class: 'selections' },
          h(
            'h3',
            {},
            'Selections of ',
            policyLink(p.name),
            p.highWater ? h('span', { class: 'muted' }, ` — high-water mark ${p.highWater}`) : null,
          ),
          p.selections.length
            ? selectionChart(p, range, width)
            : h('p', { class: 'muted' }, 'No selection yet.'),
        ),
      ),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'sc' },
      h('h2', { id: 'sc' }, 'Each scan'),
      h(
        'table',
        { class: 'grid scans' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'When'),
            h('th', {}, 'Outcome'),
            h('th', {}, 'Tags'),
            h('th', {}, 'Added'),
            h('th', {}, 'Removed'),
            h('th', {}, 'Registry said'),
          ),
        ),
        h(
          'tbody',
          {},
          [...t.scans].reverse().map((s) =>
            h(
              'tr',
              {
                'data-scan': s.id,
                'data-outcome': s.outcome,
                class: s.outcome === 'failed' ? 'failed' : s.anomalies.length ? 'anomalous' : '',
              },
              h('td', { 'data-label': 'When' }, time(s.at)),
              h('td', { 'data-label': 'Outcome' }, h('span', { class: `result r-${s.outcome}` }, s.outcome)),
              h('td', { 'data-label': 'Tags', class: 'num' }, s.tags ?? '—'),
              h('td', { 'data-label': 'Added', class: 'tags-diff' }, diff('+', s.added, s.addedCount)),
              h('td', { 'data-label': 'Removed', class: 'tags-diff' }, diff('−', s.removed, s.removedCount)),
              h(
                'td',
                { 'data-label': 'Registry said', class: 'why' },
                s.error ? h('span', { class: 'error' }, s.error) : null,
                s.anomalies.map((a) => h('div', { class: 'anomaly', 'data-anomaly': a.kind }, a.text)),
              ),
            ),
          ),
        ),
      ),
    ),
  );
  return main;
}

function diff(sign: string, names: string[], count: number): HTMLElement | string {
  if (count === 0) return '';
  const shown = names.slice(0, 3).join(', ');
  return h(
    'span',
    { title: names.join('\n') },
    h('strong', {}, `${sign}${count}`),
    ' ',
    h('span', { class: 'mono small' }, shown + (count > 3 ? ', …' : '')),
  );
}

export { time };
