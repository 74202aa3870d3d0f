/**
 * A Provider Secret's `headers` key: a YAML map of header name → value that Flux adds to generic
 * requests. Checked when the configuration is loaded, so that a header Node would refuse to send
 * (a line break in a value, a space in a name) is a configuration error naming the Provider and
 * the key, not a send that fails five times. Messages never quote a value, nor a name that is
 * not a valid one (it may be a value pasted in the wrong place).
 */
import { parse } from 'yaml';

export type HeadersResult = { ok: true; headers: Record<string, string> } | { ok: false; problem: string };

/** RFC 9110 §5.6.2 `token`: the characters of a field name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 9110 §5.5 field-value characters as Node sends them: tab, visible ASCII, obs-text (Latin-1). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const ordinal = (n: number): string => {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
};

/** The headers of `text` (the key's value), or what is wrong with them, in words. */
export function providerHeaders(text: string): HeadersResult {
  let parsed: unknown;
  try {
    parsed = parse(text, { logLevel: 'error' });
  } catch (err) {
    return { ok: false, problem: `is not YAML (${(err as Error).name})` };
  }
  if (parsed === null || parsed === undefined) return { ok: true, headers: {} };
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    return { ok: false, problem: 'must be a YAML map of header: value' };
  const headers: Record<string, string> = {};
  let i = 0;
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
    i++;
    if (!TOKEN.test(k))
      return {
        ok: false,
        problem: `the ${ordinal(i)} header's name is not a valid HTTP header name (RFC 9110: letters, digits and !#$%&'*+-.^_\`|~, no spaces, colons or line breaks)`,
      };
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
      return { ok: false, problem: `header ${k} must have a string value` };
    const value = String(v);
    if (!FIELD_VALUE.test(value))
      return {
        ok: false,
        problem: `header ${k} has a line break or another character HTTP does not allow in its value (control characters, characters beyond Latin-1)`,
      };
    headers[k] = value;
  }
  return { ok: true, headers };
}
