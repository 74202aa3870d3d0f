/**
 * The daemon's per-object metric families: one series for each repository, policy, automation
 * or job (docs/serve.md, Metrics). pawl renders these itself rather than through prom-client
 * (issue 27): prom-client formats every series' labels again at each scrape, through its
 * generic path (an object of labels copied per series, `Object.entries`, three `replace`s per
 * label), and at 10,000 images a scrape of them took 100–180 ms of CPU and ~50,000 short-lived
 * strings. Here a series is its rendered name and labels, made once, and its value: a scrape
 * appends the values. The text is byte for byte prom-client's (test/serve/series.test.ts).
 */

import { copyString } from '../util/index.js';

export type Labels<L extends string> = Readonly<Record<L, string>>;

/** prom-client's escaping of a label value: backslash, newline, double quote. */
function escapeLabel(value: string): string {
  return /[\\\n"]/.test(value)
    ? value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
    : value;
}

/** prom-client's escaping of help text: backslash and newline. */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample's value as the text format writes it (prom-client's spelling of NaN included). */
function valueText(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return String(v);
}

/** A counter or gauge whose series are keyed by a fixed list of labels. */
export class ObjectFamily<L extends string> {
  /** Each series' `name{label="value",…} `, in the order first seen, and its value. */
  readonly #series = new Map<string, number>();
  readonly #head: string;
  /** Scrapes reading the series now (`pieces`): removals wait for them. */
  #readers = 0;
  /** Series removed while a scrape read them, removed once none does. */
  #removed: Set<string> | null = null;

  constructor(
    readonly name: string,
    help: string,
    readonly type: 'counter' | 'gauge',
    private readonly labelNames: readonly L[],
  ) {
    this.#head = `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}`;
  }

  #key(labels: Labels<L>): string {
    let key = `${this.name}{`;
    for (let i = 0; i < this.labelNames.length; i++) {
      const n = this.labelNames[i]!;
      key += `${i === 0 ? '' : ','}${n}="${escapeLabel(labels[n])}"`;
    }
    return `${key}} `;
  }

  inc(labels: Labels<L>, by = 1): void {
    const key = this.#key(labels);
    const was = this.#series.get(key);
    this.#put(key, was === undefined, (was ?? 0) + by);
  }

  set(labels: Labels<L>, value: number): void {
    const key = this.#key(labels);
    this.#put(key, !this.#series.has(key), value);
  }

  #put(key: string, added: boolean, value: number): void {
    // A new series keeps a flat copy of its key, not the concatenation's tree of parts.
    this.#series.set(added ? copyString(key) : key, value);
    this.#removed?.delete(key);
  }

  remove(labels: Labels<L>): void {
    const key = this.#key(labels);
    // While a scrape walks the series, one removed and added again would come round again at
    // the end of the walk: its name twice in one scrape. It goes once no scrape reads.
    if (this.#readers > 0) {
      if (this.#series.has(key)) (this.#removed ??= new Set()).add(key);
    } else this.#series.delete(key);
  }

  /** The family in the text exposition format, without a trailing newline (as prom-client's). */
  render(): string {
    const out: string[] = [];
    this.renderTo(out);
    return out.join('');
  }

  /** `render`'s text appended to `out` in pieces (`pieces`). */
  renderTo(out: string[]): void {
    for (const p of this.pieces()) out.push(p);
  }

  /**
   * `render`'s text in pieces of about PIECE characters, each made when it is asked for. At
   * 10,000 images a family's text is ~0.6 MB: as one string it went into V8's large-object space
   * at every scrape (issue 27), and made all at once, its pieces waited for the response to write
   * them, through enough young-generation collections to be moved to the old one: the scrapes of
   * a round at 10,000 images left ~90 MB there for the next full collection. Each piece is
   * joined flat from its parts: no concatenated string per series.
   */
  *pieces(): Generator<string, void, undefined> {
    this.#readers++;
    try {
      let parts: string[] = [this.#head];
      let size = this.#head.length;
      for (const [key, value] of this.#series) {
        if (size >= PIECE) {
          yield parts.join('');
          parts = [];
          size = 0;
        }
        const v = valueText(value);
        parts.push('\n', key, v);
        size += 1 + key.length + v.length;
      }
      yield parts.join('');
    } finally {
      if (--this.#readers === 0 && this.#removed !== null) {
        for (const key of this.#removed) this.#series.delete(key);
        this.#removed = null;
      }
    }
  }
}

/** Characters in a scrape's piece: a string well below V8's large-object size (128 KiB). */
export const PIECE = 16_384;
