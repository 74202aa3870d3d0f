import uPlot from 'uplot';
import { ago, h, time, withTimes } from './dom.js';
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
  // `shown` (src/serve/dashboard/timeline.ts): a failure sits at the last known count; before any answer, a gap.
  const count = t.scans.map((s) => (s.outcome === 'failed' ? null : s.tags));
  const failed = t.scans.map((s) => (s.outcome === 'failed' ? s.shown : null));
  const anomalous = t.scans.map((s) => (s.anomalies.length > 0 ? s.tags : null));
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
      { value: (_u, v) => (v === null ? '—' : ago(new Date(v * 1000).toISOString())) },
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
  const ord = (tag: string | null) => (tag === null ? null : p.tags.indexOf(tag));
  // One time axis for the selections, the value in Git and the commits; each series has a value
  // at its own times only (null elsewhere, spanned by the stepped lines).
  const at = new Map<number, number>();
  const points = [
    ...p.selections.map((s) => ({
      x: secs(s.at),
      series: 0,
      y: ord(s.candidate) ?? -0.5,
      none: !s.candidate,
    })),
    ...p.inGit.map((g) => ({ x: secs(g.at), series: 1, y: ord(g.value), none: false })),
    ...p.git.map((g) => ({
      x: secs(g.at),
      series: g.kind === 'rollback' ? 3 : 2,
      y: ord(g.value),
      none: false,
    })),
  ].sort((a, b) => a.x - b.x);
  const xs: number[] = [];
  for (const pt of points) if (!at.has(pt.x)) at.set(pt.x, xs.push(pt.x) - 1);
  const column = () => xs.map((): number | null => null);
  const selected = column();
  const none = column();
  const inGit = column();
  const commits = column();
  const rollbacks = column();
  for (const pt of points) {
    const i = at.get(pt.x)!;
    if (pt.series === 0) (pt.none ? none : selected)[i] = pt.y;
    else [inGit, commits, rollbacks][pt.series - 1]![i] = pt.y;
  }
  const hw = ord(p.highWater);
  const high = xs.map(() => hw);
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
      { value: (_u, v) => (v === null ? '—' : ago(new Date(v * 1000).toISOString())) },
      {
        label: 'selected',
        stroke: css('--good'),
        width: 2,
        spanGaps: true,
        paths: uPlot.paths.stepped!({ align: 1 }),
        points: { show: true, size: 6 },
        value: (_u, v) => (v === null ? '—' : (p.tags[v] ?? '')),
      },
      {
        label: 'in Git',
        stroke: css('--accent'),
        width: 1.5,
        spanGaps: true,
        paths: uPlot.paths.stepped!({ align: 1 }),
        points: { show: false },
        value: (_u, v) => (v === null ? '—' : (p.tags[v] ?? '')),
      },
      { label: 'commit', ...pointsOnly(css('--accent'), 12), value: (_u, v) => (v === null ? '' : 'commit') },
      {
        label: 'rollback',
        ...pointsOnly(css('--pin'), 14),
        value: (_u, v) => (v === null ? '' : 'rollback'),
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
  charts.push(new uPlot(opts, [xs, selected, inGit, commits, rollbacks, high, none], el));
  return el;
}

export function renderRepository(t: Timeline): HTMLElement {
  destroyCharts();
  const all = [
    ...t.scans.map((s) => secs(s.at)),
    ...t.policies.flatMap((p) => [...p.selections, ...p.inGit, ...p.git].map((s) => secs(s.at))),
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
      !t.scans.length
        ? h('p', {}, 'No scans yet.')
        : t.answered
          ? countChart(t, range, width)
          : h(
              'p',
              { class: 'calm', 'data-no-answer': '' },
              `No answer yet: the registry has not listed this repository's tags in ${t.scans.length} scan${t.scans.length === 1 ? '' : 's'}, so there is no count to plot.`,
              t.scans[t.scans.length - 1]?.error
                ? [
                    ' It said: ',
                    h('span', { class: 'error' }, withTimes(t.scans[t.scans.length - 1]!.error!)),
                  ]
                : null,
            ),
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
            p.inGit.length
              ? h(
                  'span',
                  { class: 'muted', 'data-in-git': '' },
                  ` — in Git ${p.inGit[p.inGit.length - 1]!.value}`,
                )
              : null,
          ),
          p.selections.length || p.inGit.length
            ? selectionChart(p, range, width)
            : h('p', { class: 'muted' }, 'No selection yet.'),
          gitMarks(p.git),
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
          t.rows.map((s) =>
            h(
              'tr',
              {
                'data-scan': s.id,
                'data-outcome': s.outcome,
                'data-count': s.count,
                class: s.outcome === 'failed' ? 'failed' : s.anomalies.length ? 'anomalous' : '',
              },
              h(
                'td',
                { 'data-label': 'When' },
                time(s.at),
                s.count > 1
                  ? h('span', { class: 'times' }, ` ×${s.count} in a row since `, time(s.firstAt))
                  : null,
              ),
              h('td', { 'data-label': 'Outcome' }, h('span', { class: `result r-${s.outcome}` }, s.outcome)),
              h('td', { 'data-label': 'Tags', class: 'num' }, s.tags ?? '—'),
              h('td', { 'data-label': 'Added', class: 'tags-diff' }, diff('+', s.added, s.addedCount)),
              h('td', { 'data-label': 'Removed', class: 'tags-diff' }, diff('−', s.removed, s.removedCount)),
              h(
                'td',
                { 'data-label': 'Registry said', class: 'why' },
                s.error ? h('span', { class: 'error' }, withTimes(s.error)) : null,
                s.anomalies.map((a) =>
                  h('div', { class: 'anomaly', 'data-anomaly': a.kind }, withTimes(a.text)),
                ),
              ),
            ),
          ),
        ),
      ),
    ),
  );
  return main;
}

/** pawl's commits to the policy's lines, newest first: what the chart's commit marks are. */
function gitMarks(marks: Timeline['policies'][number]['git']): HTMLElement | null {
  if (marks.length === 0) return null;
  return h(
    'ul',
    { class: 'events git-marks', 'aria-label': 'Commits' },
    [...marks]
      .reverse()
      .map((g) =>
        h(
          'li',
          { 'data-git-kind': g.kind },
          time(g.at),
          ' ',
          h('strong', {}, g.kind === 'run' ? 'upgrade' : g.kind),
          ' to ',
          h('span', { class: 'mono' }, g.value),
          ' in ',
          g.commit
            ? g.url
              ? h('a', { href: g.url, class: 'mono', rel: 'noreferrer' }, g.commit.slice(0, 10))
              : h('span', { class: 'mono', title: g.commit }, g.commit.slice(0, 10))
            : '—',
          g.by ? ` by ${g.by}` : '',
          g.reason ? h('span', { class: 'why', 'data-reason': '' }, `: ${g.reason}`) : null,
        ),
      ),
  );
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
