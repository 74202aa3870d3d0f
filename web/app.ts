/**
 * pawl's dashboard: a hash-routed page over the admin listener's JSON API (docs/dashboard.md).
 * Read-only; everything it loads comes from the page's own origin.
 */
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { h, time } from './dom.js';
import { LiveRefresh } from './live-refresh.js';
import { renderOverview } from './overview.js';
import { renderPolicy } from './policy.js';
import { destroyCharts, renderRepository } from './repository.js';
import type { Explanation, Overview, Timeline } from './types.js';

type Route = { view: 'overview' } | { view: 'repository'; name: string } | { view: 'policy'; name: string };

function route(): Route {
  const m = /^#\/(repository|policy)\/([^/]+\/[^/]+)$/.exec(location.hash);
  if (m) return { view: m[1] as 'repository' | 'policy', name: decodeURIComponent(m[2]!) };
  return { view: 'overview' };
}

async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (res.status === 401) {
    location.href = '/login';
    throw new Error('sign in first');
  }
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${path}: HTTP ${res.status}`);
  return body;
}

const main = document.getElementById('main')!;
const liveEl = document.getElementById('live')!;
const feed: { at: string; text: string; times: number }[] = [];
let rendering = 0;
/** A navigation's render may be overtaken by a live refresh's: the refresh then moves the focus. */
let focusPending = false;

async function render(focus: boolean): Promise<void> {
  const n = ++rendering;
  if (focus) focusPending = true;
  const r = route();
  const scrollY = window.scrollY;
  let view: HTMLElement;
  try {
    if (r.view === 'repository') {
      const [ns, name] = r.name.split('/');
      view = renderRepository(await getJson<Timeline>(`/api/v1/repositories/${ns}/${name}/timeline`));
    } else if (r.view === 'policy') {
      const [ns, name] = r.name.split('/');
      destroyCharts();
      view = renderPolicy(await getJson<Explanation>(`/api/v1/policies/${ns}/${name}/explain`));
    } else {
      destroyCharts();
      view = renderOverview(await getJson<Overview>('/api/v1/dashboard'), activity());
    }
  } catch (err) {
    view = h(
      'div',
      { class: 'view' },
      h('p', { class: 'error', role: 'alert' }, `Cannot load this view: ${String(err)}`),
    );
  }
  if (n !== rendering) return;
  focus = focusPending;
  focusPending = false;
  // A live refresh must not take the keyboard focus away: find the same element again.
  const keep = focus ? null : focusKey(document.activeElement);
  main.replaceChildren(view);
  // The heading takes the focus after a navigation, and keeps it across a live re-render.
  main.querySelector<HTMLElement>('h1')?.setAttribute('tabindex', '-1');
  main.dataset.view = r.view;
  main.dataset.loaded = String(n);
  document.title = r.view === 'overview' ? 'pawl' : `${r.name} — pawl`;
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a'))
    a.toggleAttribute('aria-current', a.getAttribute('href') === (location.hash || '#/'));
  if (focus) {
    window.scrollTo(0, 0);
    main.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
  } else {
    window.scrollTo(0, scrollY);
    if (keep) main.querySelector<HTMLElement>(keep)?.focus({ preventScroll: true });
  }
}

function focusKey(el: Element | null): string | null {
  if (!(el instanceof HTMLElement) || !main.contains(el)) return null;
  if (el.tagName === 'H1') return 'h1';
  const href = el.getAttribute('href');
  if (href) return `${el.tagName.toLowerCase()}[href="${CSS.escape(href)}"]`;
  const label = el.getAttribute('aria-label');
  if (label) return `${el.tagName.toLowerCase()}[aria-label="${CSS.escape(label)}"]`;
  return null;
}

function activity(): HTMLElement {
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'act' },
    h('h2', { id: 'act' }, 'Live activity'),
    feed.length === 0
      ? h('p', { class: 'muted' }, 'Scans, passes and commits appear here as they happen.')
      : h(
          'ul',
          { class: 'events', 'data-feed': '' },
          feed.map((f) =>
            h(
              'li',
              {},
              time(f.at),
              ' ',
              f.text,
              f.times > 1 ? h('span', { class: 'times' }, ` (×${f.times})`) : null,
            ),
          ),
        ),
  );
}

// Live: the daemon's event stream; an event that concerns the view re-renders it, at most
// every REFRESH_MS and never over a render in progress (live-refresh.ts).
const REFRESH_MS = 1000;
const live = new LiveRefresh(() => render(false), {
  now: () => Date.now(),
  setTimeout: (fn, ms) => window.setTimeout(fn, ms),
});
function refreshSoon(): void {
  // The explain view reads the git workspace: refresh it less often.
  live.request(route().view === 'policy' ? 5 * REFRESH_MS : REFRESH_MS);
}

/** Scans matter to the overview and to their repository's page; passes to every view. */
function concerns(kind: 'scan' | 'pass', repository?: string): boolean {
  const r = route();
  if (kind === 'pass' || r.view === 'overview') return true;
  return r.view === 'repository' && r.name === repository;
}

function note(text: string, at: string): void {
  // The same news again (a scan failing the same way every minute) is one line with a count.
  if (feed[0]?.text === text) {
    feed[0].times++;
    feed[0].at = at;
    return;
  }
  feed.unshift({ at, text, times: 1 });
  feed.splice(20);
}

function connect(): void {
  const es = new EventSource('/api/v1/stream');
  es.addEventListener('open', () => {
    liveEl.dataset.state = 'live';
    liveEl.textContent = 'live';
  });
  es.addEventListener('error', () => {
    liveEl.dataset.state = 'offline';
    liveEl.textContent = 'reconnecting…';
  });
  es.addEventListener('scan', (ev) => {
    const d = JSON.parse((ev as MessageEvent<string>).data) as {
      repository: string;
      at: string;
      tags: number;
      error: string | null;
    };
    note(
      d.error
        ? `Scan of ${d.repository} failed: ${d.error}`
        : `Scanned ${d.repository}: ${d.tags} tag${d.tags === 1 ? '' : 's'}`,
      d.at,
    );
    liveEl.dataset.events = String(Number(liveEl.dataset.events ?? 0) + 1);
    if (concerns('scan', d.repository)) refreshSoon();
  });
  es.addEventListener('pass', (ev) => {
    const d = JSON.parse((ev as MessageEvent<string>).data) as {
      automation: string;
      at: string;
      result: string | null;
      commit: string | null;
      changes: number;
      error: string | null;
    };
    note(
      d.result === 'pushed'
        ? `${d.automation} pushed ${d.commit?.slice(0, 10) ?? ''} (${d.changes} change${d.changes === 1 ? '' : 's'})`
        : `${d.automation}: ${d.result ?? 'failed'}${d.error ? ` — ${d.error}` : ''}`,
      d.at,
    );
    liveEl.dataset.events = String(Number(liveEl.dataset.events ?? 0) + 1);
    if (concerns('pass')) refreshSoon();
  });
}

window.addEventListener('hashchange', () => void live.run(() => render(true)));
void live.run(() => render(false));
connect();
