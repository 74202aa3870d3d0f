/**
 * Five-field cron schedules (minute hour day-of-month month day-of-week) read in an IANA time
 * zone: what `guard.window` opens on. Pure: the caller passes the time.
 */

export interface CronSchedule {
  text: string;
  timeZone: string;
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  days: ReadonlySet<number>;
  months: ReadonlySet<number>;
  weekdays: ReadonlySet<number>;
  /** Cron's rule: when both day fields are restricted, a day matching either matches. */
  dayOr: boolean;
}

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const;

const NAMES: Record<number, Record<string, number>> = {
  3: { jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12 },
  4: { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 },
};

/** Throws an Error saying which field is wrong and what a valid one looks like. */
export function parseCron(text: string, timeZone: string): CronSchedule {
  checkTimeZone(timeZone);
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 5)
    throw new Error(
      `"${text}" is not a cron schedule: it needs five fields (minute hour day-of-month month day-of-week), e.g. "0 9-17 * * 1-5"`,
    );
  const sets = parts.map((p, i) => parseField(p, i, text));
  const weekdays = new Set([...sets[4]!].map((d) => d % 7));
  return {
    text,
    timeZone,
    minutes: sets[0]!,
    hours: sets[1]!,
    days: sets[2]!,
    months: sets[3]!,
    weekdays,
    dayOr: parts[2] !== '*' && parts[4] !== '*',
  };
}

/** Throws when Node's Intl does not know the zone. */
export function checkTimeZone(timeZone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new Error(`"${timeZone}" is not a time zone; use an IANA name, e.g. Europe/Berlin, UTC`);
  }
}

function parseField(part: string, index: number, text: string): Set<number> {
  const { name, min, max } = FIELDS[index]!;
  const bad = (why: string): Error =>
    new Error(
      `"${text}": the ${name} field "${part}" ${why} (allowed: ${min}-${max}, *, lists, ranges, /steps)`,
    );
  const value = (s: string): number => {
    const named = NAMES[index]?.[s.toLowerCase()];
    if (named !== undefined) return named;
    if (!/^[0-9]+$/.test(s)) throw bad(`has "${s}", not a number`);
    const n = Number(s);
    if (n < min || n > max) throw bad(`has ${n}, out of range`);
    return n;
  };
  const out = new Set<number>();
  for (const item of part.split(',')) {
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range === '') throw bad('is malformed');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw bad(`has step "${stepText}"`);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [min, max];
    else if (range.includes('-')) {
      const [a, b] = range.split('-');
      lo = value(a ?? '');
      hi = value(b ?? '');
      if (lo > hi) throw bad(`has the range ${range} backwards`);
    } else {
      lo = value(range);
      hi = stepText === undefined ? lo : max;
    }
    for (let n = lo; n <= hi; n += step) out.add(n);
  }
  return out;
}

interface Local {
  month: number;
  day: number;
  weekday: number;
  hour: number;
  minute: number;
}

const WEEKDAY: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

function localParts(fmt: Intl.DateTimeFormat, t: number): Local {
  const p: Record<string, string> = {};
  for (const x of fmt.formatToParts(new Date(t))) p[x.type] = x.value;
  return {
    month: Number(p.month),
    day: Number(p.day),
    weekday: WEEKDAY[p.weekday ?? ''] ?? 0,
    hour: Number(p.hour) % 24,
    minute: Number(p.minute),
  };
}

const MINUTE = 60_000;
/** Far enough for `0 0 29 2 *` (a leap day) and then some. */
const HORIZON = 8 * 366 * 24 * 60 * MINUTE;

/** The first minute at or after `from` that the schedule matches; null when none within eight years. */
export function nextMatch(s: CronSchedule, from: Date): Date | null {
  const fmt = new Intl.DateTimeFormat('en-US', {
    timeZone: s.timeZone,
    hourCycle: 'h23',
    month: 'numeric',
    day: 'numeric',
    weekday: 'short',
    hour: 'numeric',
    minute: 'numeric',
  });
  let t = Math.ceil(from.getTime() / MINUTE) * MINUTE;
  const end = t + HORIZON;
  while (t <= end) {
    const l = localParts(fmt, t);
    const dayOk = s.dayOr
      ? s.days.has(l.day) || s.weekdays.has(l.weekday)
      : s.days.has(l.day) && s.weekdays.has(l.weekday);
    if (!s.months.has(l.month) || !dayOk) {
      // Skip to (about) the next local day; an hour short of it, so a DST day never overshoots.
      const left = 24 * 60 - (l.hour * 60 + l.minute);
      t += Math.max(1, left - 60) * MINUTE;
      continue;
    }
    if (!s.hours.has(l.hour)) {
      t += (60 - l.minute) * MINUTE;
      continue;
    }
    if (s.minutes.has(l.minute)) return new Date(t);
    t += MINUTE;
  }
  return null;
}
