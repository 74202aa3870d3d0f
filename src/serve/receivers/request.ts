/**
 * Reading an untrusted webhook request: headers, secrets compared in constant time, and JSON
 * bodies parsed only when they are small, valid UTF-8 and shallow. Nothing here throws on
 * hostile input; every failure is a value the caller turns into a status code.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export type Headers = Record<string, string | string[] | undefined>;

/** A header's single value (names are case-insensitive); `many` when it was sent more than once. */
export type HeaderValue = { kind: 'none' } | { kind: 'one'; value: string } | { kind: 'many' };

export function header(headers: Headers, name: string): HeaderValue {
  const want = name.toLowerCase();
  const values: string[] = [];
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() !== want) continue;
    const v = headers[key];
    if (typeof v === 'string') values.push(v);
    else if (Array.isArray(v)) for (const item of v) if (typeof item === 'string') values.push(item);
  }
  if (values.length === 0) return { kind: 'none' };
  // An identical repeat is what a proxy adds; two different values are an attempt to confuse us.
  if (values.some((v) => v !== values[0])) return { kind: 'many' };
  return { kind: 'one', value: values[0]! };
}

/** The header's value, or undefined when absent or ambiguous. */
export function headerText(headers: Headers, name: string): string | undefined {
  const h = header(headers, name);
  return h.kind === 'one' ? h.value : undefined;
}

/**
 * Equality of a presented secret and the expected one that takes the same time wherever they
 * differ: both are hashed to equal-length digests first, so not even the length leaks.
 */
export function secretEquals(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export type HmacAlgorithm = 'sha1' | 'sha256' | 'sha512';
const DIGEST_BYTES: Record<HmacAlgorithm, number> = { sha1: 20, sha256: 32, sha512: 64 };
const HEX = /^[0-9a-fA-F]*$/;

/**
 * True when `hex` is the HMAC of `body` keyed with `token`. A wrong length or non-hex text is a
 * mismatch decided before any comparison (it reveals nothing about the expected digest).
 */
export function hmacMatches(algorithm: HmacAlgorithm, token: string, body: Buffer, hex: string): boolean {
  if (hex.length !== DIGEST_BYTES[algorithm] * 2 || !HEX.test(hex)) return false;
  const expected = createHmac(algorithm, Buffer.from(token, 'utf8')).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(hex, 'hex'));
}

/**
 * `sha256=<hex>` as GitHub, Bitbucket and Flux's generic-hmac send it (go-github's
 * ValidateSignature): the prefix names the hash; undefined when the prefix is not one of them.
 */
export function parsePrefixedSignature(value: string): { algorithm: HmacAlgorithm; hex: string } | undefined {
  const eq = value.indexOf('=');
  if (eq < 0) return undefined;
  const prefix = value.slice(0, eq);
  if (prefix !== 'sha1' && prefix !== 'sha256' && prefix !== 'sha512') return undefined;
  return { algorithm: prefix, hex: value.slice(eq + 1) };
}

/** Deeper than any vendor's payload (theirs are 3–5 levels) and far below what could hurt. */
export const MAX_JSON_DEPTH = 32;

export type JsonResult = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Counts bracket depth outside strings in one linear pass, so an absurdly nested body is refused
 * before JSON.parse sees it.
 */
function depthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as JSON: valid UTF-8, nested at most MAX_JSON_DEPTH deep. */
export function parseJson(body: Buffer): JsonResult {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return { ok: false, error: 'the body is not valid UTF-8' };
  }
  if (depthExceeds(text, MAX_JSON_DEPTH)) {
    return { ok: false, error: `the body is nested deeper than ${MAX_JSON_DEPTH} levels` };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, error: 'the body is not JSON' };
  }
}

/** Reading fields of parsed JSON without trusting its shape (own properties only). */
export type Json = unknown;

export function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function field(v: Json, ...path: string[]): Json {
  let cur: Json = v;
  for (const key of path) {
    if (!isObject(cur) || !Object.hasOwn(cur, key)) return undefined;
    cur = cur[key];
  }
  return cur;
}

/** A non-empty string at `path`, else undefined. */
export function text(v: Json, ...path: string[]): string | undefined {
  const f = field(v, ...path);
  return typeof f === 'string' && f !== '' ? f : undefined;
}

/** The media type of a Content-Type header, lowercased, without parameters. */
export function mediaType(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const semi = value.indexOf(';');
  const t = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
  return t === '' ? undefined : t;
}
