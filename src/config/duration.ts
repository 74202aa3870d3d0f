/**
 * Go's `time.ParseDuration` syntax, which Flux and Kubernetes use for every interval:
 * a sequence of decimal numbers with units, e.g. `1m30s`, `5m`, `1h`, `500ms`, `1.5h`; `0` alone.
 */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  '\u00b5s': 1e-3, // µ, the micro sign
  '\u03bcs': 1e-3, // μ, Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

// The micro signs escaped: the shipped bundle stays ASCII (scripts/build.ts says why).
const PART = /([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/y;

/** Milliseconds, or an Error saying what a valid duration looks like. */
export function parseDuration(text: string): number {
  const bad = (): Error =>
    new Error(`"${text}" is not a duration; write it the Go way, e.g. 30s, 5m, 1h30m, 500ms`);
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s.startsWith('-')) sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw bad();
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    PART.lastIndex = pos;
    const m = PART.exec(s);
    if (!m || m[1] === '' || m[1] === '.') throw bad();
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    pos = PART.lastIndex;
  }
  return sign * total;
}

/** `90000` → `1m30s`, for messages. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = Math.abs(ms);
  let out = ms < 0 ? '-' : '';
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (rest >= size) {
      const n = Math.floor(rest / size);
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  if (rest > 0) out += `${rest}ms`;
  return out;
}
