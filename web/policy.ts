import { copyButton, h, tagOf, time, withTimes } from './dom.js';
import { badge, repositoryLink } from './overview.js';
import type { Explanation, MarkerState } from './types.js';

const STATE_OF: Record<string, MarkerState> = {
  upgrade: 'upgrade',
  retarget: 'upgrade',
  pinned: 'pinned',
  'downgrade-blocked': 'downgrade-blocked',
  'candidate-missing': 'candidate-missing',
  'up-to-date': 'up-to-date',
  equivalent: 'up-to-date',
};

export function renderPolicy(e: Explanation): HTMLElement {
  const pinned = e.markers.some((m) => m.reason === 'pinned');
  return h(
    'div',
    { class: 'view policy' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Overview'), ' / policy'),
    h('h1', {}, e.policy),
    h(
      'p',
      { class: 'lede' },
      `${e.strategy} over `,
      repositoryLink(e.repository),
      ' ',
      h('span', { class: 'mono muted' }, e.image),
    ),
    h(
      'div',
      { class: 'columns' },
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'sel' },
        h('h2', { id: 'sel' }, 'Selection'),
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'Candidate'),
          h('dd', { class: 'mono', 'data-candidate': e.candidate ?? '' }, e.candidate ?? 'none'),
          e.selected !== e.candidate
            ? [h('dt', {}, 'Scan selected'), h('dd', { class: 'mono' }, e.selected ?? 'none')]
            : null,
          h('dt', {}, 'High-water mark'),
          h('dd', { class: 'mono' }, e.highWater ?? '—', e.highWaterAt ? [' ', time(e.highWaterAt)] : null),
          h('dt', {}, 'Ratchet'),
          h('dd', {}, withTimes(e.ratchet)),
          e.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, withTimes(e.error))] : null,
          e.unverified
            ? [
                h('dt', {}, 'Unverified'),
                h('dd', { class: 'error' }, `${e.unverified.tag} `, withTimes(e.unverified.why)),
              ]
            : null,
        ),
        e.counts
          ? h(
              'p',
              { class: 'muted' },
              `${e.counts.tags} tags scanned; ${e.counts.excluded} excluded by the exclusion list, ${e.counts.filteredOut} not matching filterTags, ${e.counts.unparsable} not parsable, ${e.counts.outOfRange} out of range.`,
            )
          : null,
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'cmds' },
        h('h2', { id: 'cmds' }, 'Commands'),
        h(
          'p',
          { class: 'muted' },
          'This page changes nothing. To act, run one of these beside the daemon (they carry its -c and --state-dir):',
        ),
        copyButton(e.commands.rollback, `roll back ${e.policy}`),
        h(
          'p',
          { class: 'muted small' },
          e.rollbackTo
            ? `Writes ${e.rollbackTo}, the newest candidate older than the lines, commits with trailers and pins the lines until a newer release.`
            : 'No candidate is known to be older than the lines: put the tag to go back to in place of TAG. Commits with trailers and pins the lines until a newer release.',
        ),
        copyButton(e.commands.release, `release ${e.policy}`),
        h(
          'p',
          { class: 'muted small' },
          pinned
            ? 'Lifts the pin and writes the candidate now.'
            : 'Nothing is pinned now; release would change nothing.',
        ),
        copyButton(e.commands.explain, `explain ${e.policy}`),
      ),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'mk' },
      h('h2', { id: 'mk' }, 'Each marked line'),
      e.markers.length === 0
        ? h('p', { class: 'muted' }, 'No marker uses this policy.')
        : h(
            'ul',
            { class: 'decisions' },
            e.markers.map((m) =>
              h(
                'li',
                { 'data-marker': `${m.file}:${m.line}`, 'data-reason': m.reason },
                h(
                  'div',
                  { class: 'head' },
                  badge(STATE_OF[m.reason] ?? 'error', m.words),
                  h('span', { class: 'mono' }, `${m.file}:${m.line}`),
                  h('span', { class: 'muted' }, ` ${m.automation}`),
                ),
                h(
                  'p',
                  {},
                  h('span', { class: 'mono' }, tagOf(m.value)),
                  m.action === 'write' ? ` → ${e.candidate ?? ''}` : ' kept. ',
                  withTimes(m.detail),
                ),
                m.advice ? h('p', { class: 'advice' }, withTimes(m.advice)) : null,
                m.pin
                  ? h(
                      'div',
                      { class: 'pin', 'data-pin': m.pin.state },
                      h('strong', {}, `Pin: ${m.pin.state}`),
                      h(
                        'dl',
                        { class: 'facts' },
                        m.pin.commit
                          ? [h('dt', {}, 'Commit'), h('dd', { class: 'mono' }, m.pin.commit.slice(0, 12))]
                          : null,
                        m.pin.author
                          ? [
                              h('dt', {}, m.pin.kind === 'rollback' ? 'Rolled back by' : 'Author'),
                              h('dd', { 'data-pin-author': '' }, m.pin.author),
                            ]
                          : null,
                        m.pin.kind === 'rollback'
                          ? [
                              h('dt', {}, 'Reason'),
                              m.pin.reason
                                ? h('dd', { 'data-pin-reason': '' }, m.pin.reason)
                                : h('dd', { class: 'muted', 'data-pin-reason': '' }, 'none given (--reason)'),
                            ]
                          : null,
                        m.pin.time ? [h('dt', {}, 'Time'), h('dd', {}, time(m.pin.time))] : null,
                        m.pin.previous
                          ? [h('dt', {}, 'Moved from'), h('dd', { class: 'mono' }, tagOf(m.pin.previous))]
                          : null,
                      ),
                      h('p', { class: 'muted' }, withTimes(m.pin.detail)),
                    )
                  : null,
              ),
            ),
          ),
      e.automationErrors.map((a) => h('p', { class: 'error' }, `${a.automation}: `, withTimes(a.error))),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'cand' },
      h('h2', { id: 'cand' }, 'Ranked candidates'),
      e.candidates.length === 0
        ? h('p', { class: 'muted' }, 'No tag passes the policy.')
        : h(
            'table',
            { class: 'grid' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', {}, '#'),
                h('th', {}, 'Tag'),
                h('th', {}, 'Extracted'),
                h('th', {}, 'Ordering key'),
              ),
            ),
            h(
              'tbody',
              {},
              e.candidates.map((c) =>
                h(
                  'tr',
                  { class: c.tag === e.candidate ? 'chosen' : '' },
                  h('td', { 'data-label': '#', class: 'num' }, c.rank),
                  h(
                    'td',
                    { 'data-label': 'Tag', class: 'mono' },
                    c.tag,
                    c.tag === e.candidate ? h('span', { class: 'muted' }, ' ← candidate') : null,
                  ),
                  h('td', { 'data-label': 'Extracted', class: 'mono' }, c.extracted),
                  h('td', { 'data-label': 'Key', class: 'mono' }, c.key),
                ),
              ),
            ),
          ),
    ),
    e.events.length
      ? h(
          'section',
          { class: 'card', 'aria-labelledby': 'ev' },
          h('h2', { id: 'ev' }, 'Recent guard events'),
          h(
            'ul',
            { class: 'events' },
            collapse(e.events)
              .slice(0, 12)
              .map((ev) =>
                h(
                  'li',
                  { 'data-event': ev.kind },
                  time(ev.at),
                  ' ',
                  h('strong', {}, ev.kind),
                  ' ',
                  withTimes(ev.text),
                  ev.times > 1
                    ? h('span', { class: 'times' }, ` (×${ev.times}, first `, time(ev.first), ')')
                    : null,
                ),
              ),
          ),
        )
      : null,
  );
}

/** Passes record the same event again while nothing changes: one line per run of repeats. */
function collapse(
  events: Explanation['events'],
): { at: string; first: string; kind: string; text: string; times: number }[] {
  const out: { at: string; first: string; kind: string; text: string; times: number }[] = [];
  for (const ev of events) {
    const text = typeof ev.detail.detail === 'string' ? ev.detail.detail : describe(ev.detail);
    const prev = out[out.length - 1];
    if (prev && prev.kind === ev.kind && prev.text === text) {
      prev.times++;
      prev.first = ev.at;
    } else out.push({ at: ev.at, first: ev.at, kind: ev.kind, text, times: 1 });
  }
  return out;
}

function describe(d: Record<string, unknown>): string {
  return Object.entries(d)
    .filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join(', ');
}
