/**
 * A second SigV4, written from AWS's specification ("Create a signed AWS API request",
 * docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html) and not from pawl's
 * signer, for the stand-ins to check requests with: re-signing a request with pawl's own signer
 * could only ever agree with it. It works on the request as it arrived on the wire (the raw
 * request target, the received headers), as a service does, and is itself checked against the
 * published vectors of AWS's signature test suite (test/scan/sigv4.test.ts).
 */
import { createHash, createHmac } from 'node:crypto';

export interface WireRequest {
  method: string;
  /** The request target as sent: path and raw query, e.g. `/?Param2=value2&Param1=value1`. */
  target: string;
  /** Received headers, names in any case; a repeated header is one value joined with commas. */
  headers: Record<string, string>;
  body: string;
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** RFC 3986 encoding byte by byte: every byte outside the unreserved set as %XX, upper-case hex. */
export function strictEncode(text: string): string {
  let out = '';
  for (const ch of text) {
    if (UNRESERVED.test(ch)) {
      out += ch;
      continue;
    }
    for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const decode = (s: string): string => decodeURIComponent(s);

/** The canonical URI of a raw path (not S3): each segment, as received, encoded again. */
export function canonicalUri(rawPath: string): string {
  if (rawPath === '' || rawPath === '/') return '/';
  return rawPath
    .split('/')
    .map((segment) => strictEncode(segment))
    .join('/');
}

/** The canonical query of a raw query string: pairs decoded, encoded strictly, sorted by name then value. */
export function canonicalQueryString(rawQuery: string): string {
  if (rawQuery === '') return '';
  const pairs = rawQuery.split('&').map((part) => {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? '' : part.slice(eq + 1);
    return [strictEncode(decode(name)), strictEncode(decode(value))] as [string, string];
  });
  // Code-unit order of the encoded (ASCII) strings is byte order.
  pairs.sort((a, b) => (a[0] === b[0] ? cmp(a[1], b[1]) : cmp(a[0], b[0])));
  return pairs.map(([n, v]) => `${n}=${v}`).join('&');
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Canonical header value: leading and trailing spaces dropped, inner runs of spaces made one. */
export function canonicalHeaderValue(value: string): string {
  return value
    .split(' ')
    .filter((w) => w !== '')
    .join(' ');
}

export function referenceCanonicalRequest(req: WireRequest, signedHeaders: string[]): string {
  const q = req.target.indexOf('?');
  const path = q < 0 ? req.target : req.target.slice(0, q);
  const query = q < 0 ? '' : req.target.slice(q + 1);
  const lower = new Map(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const headerLines = signedHeaders.map((n) => `${n}:${canonicalHeaderValue(lower.get(n) ?? '')}\n`);
  const bodyHash = createHash('sha256').update(req.body, 'utf8').digest('hex');
  return [
    req.method,
    canonicalUri(path),
    canonicalQueryString(query),
    headerLines.join(''),
    signedHeaders.join(';'),
    bodyHash,
  ].join('\n');
}

/** The signature the request should carry for `secret`, given its date, scope and signed headers. */
export function referenceSignature(
  req: WireRequest,
  o: { secret: string; date: string; region: string; service: string; signedHeaders: string[] },
): { canonicalRequest: string; stringToSign: string; signature: string } {
  const canonicalRequest = referenceCanonicalRequest(req, o.signedHeaders);
  const day = o.date.slice(0, 8);
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    o.date,
    `${day}/${o.region}/${o.service}/aws4_request`,
    createHash('sha256').update(canonicalRequest, 'utf8').digest('hex'),
  ].join('\n');
  let key: Buffer = Buffer.from(`AWS4${o.secret}`, 'utf8');
  for (const part of [day, o.region, o.service, 'aws4_request'])
    key = createHmac('sha256', key).update(part, 'utf8').digest();
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return { canonicalRequest, stringToSign, signature };
}

/** `20150830T123600Z` as ms since the epoch; NaN when it is not one. */
export function parseAmzDate(date: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date);
  if (!m) return NaN;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

/**
 * Why a received request's SigV4 `authorization` header is not valid for `keys`, or undefined:
 * what a service checks — the scope's region and service, a known key, `host` and `x-amz-date`
 * signed, the scope's day the date's day, a date within five minutes of `now`, the signature.
 */
export function sigv4Problem(
  req: WireRequest,
  o: { keys: Record<string, string>; service: string; region: string; now: number },
): string | undefined {
  const lower = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
      lower.authorization ?? '',
    );
  if (!m) return 'no SigV4 authorization header';
  const [, keyId, day, region, service, signed, signature] = m;
  if (region !== o.region || service !== o.service)
    return `scope ${region}/${service}, expected ${o.region}/${o.service}`;
  const secret = o.keys[keyId!];
  if (!secret) return `unknown access key ${keyId}`;
  const date = lower['x-amz-date'] ?? '';
  const when = parseAmzDate(date);
  if (Number.isNaN(when)) return `x-amz-date ${JSON.stringify(date)} is not a SigV4 date`;
  if (date.slice(0, 8) !== day) return `the scope's day ${day} is not the day of x-amz-date ${date}`;
  if (Math.abs(when - o.now) > 5 * 60_000)
    return `Signature expired: ${date} is too far from the server's time`;
  const names = signed!.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return 'host and x-amz-date must be signed';
  if (lower['x-amz-security-token'] !== undefined && !names.includes('x-amz-security-token'))
    return 'x-amz-security-token is sent but not signed';
  if ([...names].sort().join(';') !== signed) return 'SignedHeaders are not sorted';
  const expected = referenceSignature(req, {
    secret,
    date,
    region: o.region,
    service: o.service,
    signedHeaders: names,
  });
  return expected.signature === signature ? undefined : 'signature does not match';
}
