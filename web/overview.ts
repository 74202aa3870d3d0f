import { copyButton, h, tagOf, time, withTimes, type Child } from './dom.js';
import { STATE_LABELS, STATE_ORDER, type MarkerState, type Overview } from './types.js';

export const badge = (state: MarkerState, text: string = STATE_LABELS[state]): HTMLElement =>
  h('span', { class: `badge s-${state}`, 'data-state': state }, text);

const link = (href: string, text: string, attrs: Record<string, string> = {}) =>
  h('a', { href, ...attrs }, text);
export const policyLink = (name: string) => link(`#/policy/${name}`, name);
export const repositoryLink = (name: string) => link(`#/repository/${name}`, name);

function section(id: string, title: string, ...body: Child[]): HTMLElement {
  return h('section', { 'aria-labelledby': id, class: 'card' }, h('h2', { id }, title), ...body);
}

function summary(o: Overview): HTMLElement {
  return h(
    'ul',
    { class: 'summary', 'aria-label': 'Marked lines by state' },
    STATE_ORDER.map((s) =>
      h(
        'li',
        { class: `chip s-${s}${o.counts[s] === 0 ? ' zero' : ''}`, 'data-count-state': s },
        h('strong', {}, o.counts[s]),
        ' ',
        STATE_LABELS[s],
      ),
    ),
  );
}

function attention(o: Overview): HTMLElement {
  if (o.attention.length === 0) {
    // Green only when there is something to be well: an empty configuration is not good news.
    const calm = o.calm ?? { kind: 'all-well', text: 'Nothing needs a person.' };
    return section(
      'attention',
      'Needs attention',
      h('p', { class: calm.kind === 'all-well' ? 'ok' : 'calm', 'data-calm': calm.kind }, calm.text),
    );
  }
  return section(
    'attention',
    `Needs attention (${o.attention.length})`,
    h(
      'ol',
      { class: 'attention' },
      o.attention.map((a) =>
        h(
          'li',
          { 'data-attention': a.state, 'data-count': a.count },
          badge(a.state),
          h(
            'div',
            {},
            h('a', { href: a.href, class: 'title' }, a.title),
            a.count > 1 ? h('span', { class: 'times' }, ` and ${a.count - 1} more`) : null,
            h('p', { class: 'why' }, withTimes(a.why)),
            a.count > 1
              ? h(
                  'details',
                  { class: 'others' },
                  h('summary', {}, `The same for ${a.count - 1} more`),
                  h(
                    'ul',
                    {},
                    a.others.map((x) => h('li', {}, h('a', { href: x.href }, x.title))),
                  ),
                )
              : null,
          ),
        ),
      ),
    ),
  );
}

function automations(o: Overview): HTMLElement {
  return section(
    'automations',
    'Automations',
    h(
      'div',
      { class: 'automations' },
      o.automations.map((a) =>
        h(
          'article',
          { class: 'automation', 'data-automation': a.name },
          h(
            'h3',
            {},
            a.name,
            a.suspended
              ? [' ', h('span', { class: 'badge suspended', title: 'spec.suspend: true' }, 'suspended')]
              : null,
          ),
          h(
            'dl',
            {},
            h('dt', {}, 'Git'),
            h(
              'dd',
              {},
              a.git ? h('span', { class: 'mono' }, a.git.url) : '—',
              a.git?.branch ? ` (${a.git.branch})` : '',
            ),
            h('dt', {}, 'Last pass'),
            h(
              'dd',
              {},
              a.lastPass
                ? [
                    h(
                      'span',
                      { class: `result r-${a.lastPass.result ?? 'failed'}` },
                      a.lastPass.result ?? 'failed',
                    ),
                    ' ',
                    time(a.lastPass.at),
                    a.lastPass.error ? h('p', { class: 'error' }, withTimes(a.lastPass.error)) : null,
                  ]
                : h('span', { class: 'muted' }, 'not yet (since this daemon started)'),
            ),
            h('dt', {}, 'Last upgrade'),
            h(
              'dd',
              { 'data-last-commit': a.lastCommit?.sha ?? '' },
              a.lastCommit
                ? [
                    a.lastCommit.url
                      ? h(
                          'a',
                          { href: a.lastCommit.url, class: 'mono', rel: 'noreferrer' },
                          a.lastCommit.sha.slice(0, 10),
                        )
                      : h('span', { class: 'mono', title: a.lastCommit.sha }, a.lastCommit.sha.slice(0, 10)),
                    ' ',
                    a.lastCommit.kind !== 'run' ? `(${a.lastCommit.kind}) ` : '',
                    time(a.lastCommit.at),
                  ]
                : h('span', { class: 'muted' }, 'none yet'),
            ),
            a.pullRequest ? h('dt', {}, 'Pull request') : null,
            a.pullRequest
              ? h(
                  'dd',
                  { 'data-pull-request': String(a.pullRequest.number) },
                  h('a', { href: a.pullRequest.url, rel: 'noreferrer' }, `#${a.pullRequest.number}`),
                  ` ${a.pullRequest.state} (${a.pullRequest.action})`,
                )
              : null,
          ),
        ),
      ),
    ),
  );
}

function markers(o: Overview): HTMLElement {
  if (o.markers.length === 0)
    return section(
      'markers',
      'Marked lines',
      h('p', { class: 'muted' }, 'No pass has decided anything yet.'),
    );
  return section(
    'markers',
    `Marked lines (${o.markers.length})`,
    h(
      'table',
      { class: 'grid markers' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'Line'),
          h('th', {}, 'Policy'),
          h('th', {}, 'Current'),
          h('th', {}, 'Candidate'),
          h('th', {}, 'State'),
          h('th', {}, 'Why'),
        ),
      ),
      h(
        'tbody',
        {},
        o.markers.map((m) =>
          h(
            'tr',
            { 'data-marker': `${m.file}:${m.line}`, 'data-state': m.state },
            h('td', { 'data-label': 'Line', class: 'mono' }, `${m.file}:${m.line}`),
            h('td', { 'data-label': 'Policy' }, policyLink(m.policy)),
            h('td', { 'data-label': 'Current', class: 'mono', title: m.current }, tagOf(m.current)),
            h('td', { 'data-label': 'Candidate', class: 'mono' }, m.candidate ?? '—'),
            h(
              'td',
              { 'data-label': 'State' },
              badge(m.state, m.dryRun && m.state === 'upgrade' ? 'would upgrade' : m.label),
            ),
            h(
              'td',
              { 'data-label': 'Why', class: 'why' },
              withTimes(m.detail),
              m.meaning ? h('span', { class: 'meaning' }, ` ${m.meaning}`) : null,
            ),
          ),
        ),
      ),
    ),
  );
}

function policies(o: Overview): HTMLElement {
  return section(
    'policies',
    'Policies',
    h(
      'table',
      { class: 'grid' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'Policy'),
          h('th', {}, 'Repository'),
          h('th', {}, 'Candidate'),
          h('th', {}, 'High-water mark'),
          h('th', {}, 'Notes'),
        ),
      ),
      h(
        'tbody',
        {},
        o.policies.map((p) =>
          h(
            'tr',
            { 'data-policy': p.name },
            h(
              'td',
              { 'data-label': 'Policy' },
              policyLink(p.name),
              h('span', { class: 'muted small' }, ` ${p.strategy}`),
            ),
            h('td', { 'data-label': 'Repository' }, repositoryLink(p.repository)),
            h(
              'td',
              { 'data-label': 'Candidate', class: 'mono' },
              p.candidate ?? h('span', { class: 'muted' }, 'none'),
            ),
            h('td', { 'data-label': 'High-water', class: 'mono' }, p.highWater ?? '—'),
            h(
              'td',
              { 'data-label': 'Notes', class: 'why' },
              p.error ? h('span', { class: 'error' }, withTimes(p.error)) : null,
              p.stale ? [badge('stale'), ' ', withTimes(p.stale)] : null,
              p.pending
                ? ` Regression to ${p.pending.candidate} seen ${p.pending.count}×, awaiting confirmation.`
                : null,
            ),
          ),
        ),
      ),
    ),
  );
}

function repositories(o: Overview): HTMLElement {
  return section(
    'repositories',
    'Image repositories',
    h(
      'table',
      { class: 'grid' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'Repository'),
          h('th', {}, 'Tags'),
          h('th', {}, 'Last scan'),
          h('th', {}, 'Registry said'),
        ),
      ),
      h(
        'tbody',
        {},
        o.repositories.map((r) =>
          h(
            'tr',
            { 'data-repository': r.name, 'data-outcome': r.lastScan?.outcome ?? 'none' },
            h(
              'td',
              { 'data-label': 'Repository' },
              repositoryLink(r.name),
              h('div', { class: 'muted small mono' }, r.image),
            ),
            h(
              'td',
              { 'data-label': 'Tags', class: 'num', 'data-tags': r.tags ?? '' },
              // Never answered is not zero tags.
              r.tags ?? h('span', { class: 'muted' }, r.lastScan ? 'no answer yet' : 'not scanned yet'),
            ),
            h(
              'td',
              { 'data-label': 'Last scan' },
              r.lastScan
                ? [
                    h('span', { class: `result r-${r.lastScan.outcome}` }, r.lastScan.outcome),
                    ' ',
                    time(r.lastScan.at),
                  ]
                : '—',
            ),
            h(
              'td',
              { 'data-label': 'Registry said', class: 'why' },
              r.lastScan?.error ? h('span', { class: 'error' }, withTimes(r.lastScan.error)) : null,
              r.lastScan?.anomalies.map((a) => h('div', { class: 'anomaly' }, withTimes(a))),
              !r.lastScan?.error && !r.lastScan?.anomalies.length
                ? h('span', { class: 'muted' }, 'ok')
                : null,
            ),
          ),
        ),
      ),
    ),
  );
}

export function renderOverview(o: Overview, aside: Child = null): HTMLElement {
  return h(
    'div',
    { class: 'view overview' },
    h('h1', { class: 'visually-hidden' }, 'Overview'),
    o.dryRun ? h('p', { class: 'banner' }, 'Dry run: pawl computes everything and writes nothing.') : null,
    summary(o),
    h('div', { class: 'columns' }, attention(o), h('div', {}, automations(o), aside)),
    markers(o),
    policies(o),
    repositories(o),
  );
}

export { copyButton };
