/** A tiny element builder: text always goes in as text (never HTML), so no value can inject markup. */
export type Child = Node | string | number | null | undefined | false | Child[];

export type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else
      el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/*
 * Times: the page shows every time one way — how long ago, with the local date and time (and
 * the offset) in the element's title — through time() below, also inside the daemon's
 * sentences (withTimes), whose ISO times are the CLI's.
 */
function absolute(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  const off = -d.getTimezoneOffset();
  const zone = `UTC${off >= 0 ? '+' : '−'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zone}`;
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  if (s < 5) return 'just now';
  if (s < 90) return `${s}s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

export function time(iso: string | null | undefined): HTMLElement {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: absolute(iso) }, ago(iso));
}

const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g;

/** A sentence with each ISO time in it shown as time() shows times. */
export function withTimes(text: string): Child[] {
  const out: Child[] = [];
  let at = 0;
  for (const m of text.matchAll(ISO_TIME)) {
    out.push(text.slice(at, m.index), time(m[0]));
    at = m.index + m[0].length;
  }
  out.push(text.slice(at));
  return out;
}

/** The tag part of a marker value (`host/org/app:1.2.3@sha256:…` → `1.2.3`), for display. */
export function tagOf(value: string): string {
  const noDigest = value.split('@')[0]!;
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(colon + 1) : noDigest;
}

export function copyButton(text: string, label: string): HTMLElement {
  const status = h('span', { class: 'copied', 'aria-live': 'polite' });
  const btn = h(
    'button',
    {
      type: 'button',
      class: 'copy',
      'aria-label': `Copy: ${label}`,
      onclick: () => {
        const done = () => {
          status.textContent = 'copied';
          setTimeout(() => (status.textContent = ''), 1500);
        };
        if (navigator.clipboard) void navigator.clipboard.writeText(text).then(done, () => select(code));
        else select(code);
      },
    },
    'Copy',
  );
  const code = h('code', {}, text);
  return h('div', { class: 'command' }, code, btn, status);
}

function select(el: HTMLElement): void {
  const r = document.createRange();
  r.selectNodeContents(el);
  const s = window.getSelection();
  s?.removeAllRanges();
  s?.addRange(r);
}
