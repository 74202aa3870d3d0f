/**
 * Go's `strconv` number parsing, as Flux's numerical policy and the template engine see numbers.
 */

function lower(c: number): number {
  return c | 0x20;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isHex(c: number): boolean {
  const l = lower(c);
  return isDigit(c) || (l >= 97 && l <= 102);
}

/** Go's `underscoreOK`: `_` only between digits, or between a base prefix and a digit. */
function underscoreOK(str: string): boolean {
  let s = str;
  let saw = '^';
  let i = 0;
  if (s.length >= 1 && (s[0] === '-' || s[0] === '+')) s = s.slice(1);
  let hex = false;
  if (s.length >= 2 && s[0] === '0' && 'box'.includes(String.fromCharCode(lower(s.charCodeAt(1))))) {
    i = 2;
    saw = '0';
    hex = lower(s.charCodeAt(1)) === 120;
  }
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c) || (hex && isHex(c))) {
      saw = '0';
      continue;
    }
    if (c === 95) {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

/** Go's `special`: `inf`, `infinity` (any case, optional sign) and `nan` (any case, no sign). */
function special(s: string): number | null {
  const l = s.toLowerCase();
  let sign = 1;
  let body = l;
  if (l[0] === '+' || l[0] === '-') {
    sign = l[0] === '-' ? -1 : 1;
    body = l.slice(1);
  } else if (l === 'nan') {
    return Number.NaN;
  }
  if (body === 'inf' || body === 'infinity') return sign * Number.POSITIVE_INFINITY;
  return null;
}

/**
 * Go's `strconv.ParseFloat(s, 64)`: decimal (`1`, `-2.5`, `.5`, `1e3`, `1_000`) and hexadecimal
 * (`0x1p-2`, exponent required) floats, `inf`/`infinity`/`nan`. Returns null where Go returns an
 * error, including values out of float64 range (`1e400`).
 */
export function parseGoFloat(s: string): number | null {
  if (s.length === 0) return null;
  const sp = special(s);
  if (sp !== null) return sp;

  let i = 0;
  let neg = false;
  if (s[0] === '+' || s[0] === '-') {
    neg = s[0] === '-';
    i++;
  }
  let hex = false;
  if (i + 2 < s.length && s[i] === '0' && lower(s.charCodeAt(i + 1)) === 120) {
    hex = true;
    i += 2;
  }
  const mantStart = i;
  let sawDot = false;
  let sawDigits = false;
  let underscores = false;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 95) {
      underscores = true;
      continue;
    }
    if (c === 46) {
      if (sawDot) break;
      sawDot = true;
      continue;
    }
    if (isDigit(c) || (hex && isHex(c))) {
      sawDigits = true;
      continue;
    }
    break;
  }
  if (!sawDigits) return null;
  const mantissa = s.slice(mantStart, i).replaceAll('_', '');

  let exp = 0;
  let hasExp = false;
  const expChar = hex ? 112 /* p */ : 101; /* e */
  if (i < s.length && lower(s.charCodeAt(i)) === expChar) {
    i++;
    if (i >= s.length) return null;
    let esign = 1;
    if (s[i] === '+') i++;
    else if (s[i] === '-') {
      esign = -1;
      i++;
    }
    if (i >= s.length || !isDigit(s.charCodeAt(i))) return null;
    let e = 0;
    for (; i < s.length && (isDigit(s.charCodeAt(i)) || s.charCodeAt(i) === 95); i++) {
      if (s.charCodeAt(i) === 95) {
        underscores = true;
        continue;
      }
      if (e < 10000) e = e * 10 + (s.charCodeAt(i) - 48);
    }
    exp = e * esign;
    hasExp = true;
  } else if (hex) {
    return null;
  }
  if (i !== s.length) return null;
  if (underscores && !underscoreOK(s.slice(0, i))) return null;

  let value: number;
  if (hex) {
    value = hexValue(mantissa, exp);
  } else {
    // JavaScript's decimal conversion rounds to nearest, as Go's does.
    value = Number(`${mantissa.startsWith('.') ? '0' : ''}${mantissa}${hasExp ? `e${exp}` : ''}`);
  }
  if (!Number.isFinite(value)) return null; // Go: ErrRange
  return neg ? -value : value;
}

function hexValue(mantissa: string, exp: number): number {
  const dot = mantissa.indexOf('.');
  const digits = dot < 0 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  const fracDigits = dot < 0 ? 0 : mantissa.length - dot - 1;
  // Number(bigint) rounds to nearest-even; scaling by powers of two is exact in the normal range
  // (a subnormal result may round twice, a difference far below any tag's precision).
  let value = Number(BigInt(`0x${digits || '0'}`));
  let e2 = exp - 4 * fracDigits;
  while (e2 > 1000 && Number.isFinite(value)) {
    value *= 2 ** 1000;
    e2 -= 1000;
  }
  while (e2 < -1000 && value !== 0) {
    value *= 2 ** -1000;
    e2 += 1000;
  }
  return value * 2 ** e2;
}
