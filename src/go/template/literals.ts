/**
 * The literals of Go's text/template: numbers as parse/node.go's newNumber reads them (with
 * strconv's syntax) and strings as strconv.Unquote reads them.
 */
import type { Item } from './lex.js';
import type { NumberNode } from './nodes.js';

/** Go's newNumber: the number `token` spells; `fail` throws the parse error Go reports. */
export function newNumber(token: Item, fail: (msg: string) => never): NumberNode {
  const text = token.val;
  const n: NumberNode = {
    kind: 'number',
    pos: token.pos,
    isInt: false,
    isFloat: false,
    int: 0n,
    float: 0,
    text,
  };
  if (token.type === 'charConstant') {
    const s = goUnquote(text);
    if (s === null || [...s].length !== 1) fail(`malformed character constant: ${text}`);
    const cp = s.codePointAt(0)!;
    n.isInt = true;
    n.isFloat = true;
    n.int = BigInt(cp);
    n.float = cp;
    return n;
  }
  if (token.type === 'complex' || text.endsWith('i')) {
    fail(`pawl does not support complex constants: ${text}`);
  }
  const i = parseGoInt(text);
  if (i !== null) {
    if (i > 0x7fffffffffffffffn || i < -0x8000000000000000n) {
      if (!/[.eEpP]/.test(text)) fail(`integer overflow: ${text}`);
    } else {
      n.isInt = true;
      n.int = i;
      n.isFloat = true;
      n.float = Number(i);
      return n;
    }
  }
  const f = parseGoFloat(text);
  if (f !== null) {
    if (!/[.eEpP]/.test(text) && !/^[+-]?0[xX]/.test(text)) fail(`integer overflow: ${text}`);
    n.isFloat = true;
    n.float = f;
    if (Number.isInteger(f) && Math.abs(f) < 2 ** 63) {
      n.isInt = true;
      n.int = BigInt(f);
    }
    return n;
  }
  fail(`illegal number syntax: ${JSON.stringify(text)}`);
}

/** strconv.ParseInt(text, 0, 64) without the range check; null when not an integer. */
function parseGoInt(text: string): bigint | null {
  const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)$/.exec(text);
  if (!m) return null;
  const sign = m[1] === '-' ? -1n : 1n;
  let body = m[2]!;
  if (body.includes('_')) {
    // Underscores only between digits, and only with a base prefix (or a leading 0).
    if (!/^0/.test(body) || /__|_$/.test(body)) return null;
    body = body.replace(/_/g, '');
  }
  let v: bigint;
  if (/^0[xXoObB]/.test(body)) {
    if (body.length === 2) return null;
    v = BigInt(body.toLowerCase());
  } else if (body.length > 1 && body.startsWith('0')) {
    v = BigInt(`0o${body.slice(1)}`);
  } else {
    v = BigInt(body);
  }
  return sign * v;
}

function parseGoFloat(text: string): number | null {
  const t = text.replace(/_/g, '');
  if (/^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)$/.test(t)) return Number(t);
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)[pP]([+-]?\d+)$/.exec(t);
  if (hex) {
    const [, sign, intPart, frac, exp] = hex;
    const mant = parseInt(`${intPart || '0'}${frac}`, 16) / 16 ** frac!.length;
    const v = mant * 2 ** Number(exp);
    return sign === '-' ? -v : v;
  }
  return null;
}

/** strconv.Unquote for "…", `…` and '…'; null when the syntax is invalid. */
export function goUnquote(q: string): string | null {
  if (q.length < 2) return null;
  const quote = q[0];
  if (quote !== q[q.length - 1]) return null;
  const body = q.slice(1, -1);
  if (quote === '`') return body.includes('`') ? null : body.replace(/\r/g, '');
  if (quote !== '"' && quote !== "'") return null;
  let out = '';
  for (let i = 0; i < body.length;) {
    const c = body[i]!;
    if (c === quote) return null;
    if (c === '\n') return null;
    if (c !== '\\') {
      const cp = body.codePointAt(i)!;
      out += String.fromCodePoint(cp);
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const e = body[i + 1];
    i += 2;
    switch (e) {
      case 'a':
        out += '\x07';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
      case "'":
        if (e !== quote) return null;
        out += e;
        break;
      case 'x':
      case 'u':
      case 'U': {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = body.slice(i, i + n);
        if (hex.length !== n || !/^[0-9a-fA-F]+$/.test(hex)) return null;
        i += n;
        const v = parseInt(hex, 16);
        if (e === 'x') {
          // A \x byte: only meaningful as UTF-8 together with its neighbours; keep ASCII, else latin-1.
          out += String.fromCharCode(v);
        } else {
          if (v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) return null;
          out += String.fromCodePoint(v);
        }
        break;
      }
      default: {
        if (e !== undefined && e >= '0' && e <= '7') {
          const oct = body.slice(i - 1, i + 2);
          if (!/^[0-7]{3}$/.test(oct)) return null;
          const v = parseInt(oct, 8);
          if (v > 255) return null;
          out += String.fromCharCode(v);
          i += 2;
          break;
        }
        return null;
      }
    }
  }
  return out;
}
