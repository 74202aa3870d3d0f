/**
 * AWS Signature Version 4 for one HTTP request, as specified in "Create a signed AWS API
 * request" (docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html). Only what the
 * ECR and STS calls need: a path without dots, a sorted query, a body hashed whole.
 */
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** ms since the epoch; undefined: does not expire. */
  expiresAt?: number;
  /** Where they came from, for messages (never the values). */
  source: string;
}

export interface SignInput {
  method: string;
  url: URL;
  /** Lower-case names; `host`, `x-amz-date` and `x-amz-security-token` are added. */
  headers: Record<string, string>;
  body: string;
  region: string;
  service: string;
  now: Date;
}

const sha256 = (data: string): string => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer =>
  createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 percent-encoding, as SigV4 wants it (unreserved characters stay). */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function canonicalQuery(url: URL): string {
  return [...url.searchParams]
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/** `20150830T123600Z`. */
export function amzDate(d: Date): string {
  return d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** The steps of one signature, apart, so that each can be checked against AWS's published vectors. */
export interface SignatureSteps {
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
  /** The request's headers with the SigV4 `authorization` header (and date, token) added. */
  headers: Record<string, string>;
}

export function signatureSteps(input: SignInput, creds: AwsCredentials): SignatureSteps {
  const date = amzDate(input.now);
  const day = date.slice(0, 8);
  const headers: Record<string, string> = { ...input.headers, host: input.url.host, 'x-amz-date': date };
  if (creds.sessionToken) headers['x-amz-security-token'] = creds.sessionToken;
  const names = Object.keys(headers)
    .map((k) => k.toLowerCase())
    .sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const canonicalHeaders = names.map((n) => `${n}:${lower[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    input.method,
    input.url.pathname.split('/').map(uriEncode).join('/') || '/',
    canonicalQuery(input.url),
    canonicalHeaders,
    signedHeaders,
    sha256(input.body),
  ].join('\n');
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonicalRequest)].join('\n');
  const kDate = hmac(`AWS4${creds.secretAccessKey}`, day);
  const kSigning = hmac(hmac(hmac(kDate, input.region), input.service), 'aws4_request');
  const signature = createHmac('sha256', kSigning).update(stringToSign, 'utf8').digest('hex');
  return {
    canonicalRequest,
    stringToSign,
    signature,
    headers: {
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    },
  };
}

/** The request's headers with the SigV4 `authorization` header (and date, token) added. */
export function signRequest(input: SignInput, creds: AwsCredentials): Record<string, string> {
  return signatureSteps(input, creds).headers;
}
