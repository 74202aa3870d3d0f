/**
 * SigV4 against AWS's published signature test suite (`aws-sig-v4-test-suite`, the vectors of
 * "Signature Version 4 test suite" in AWS's General Reference): for each case the canonical
 * request, the string to sign and the signature, asserted apart so that a failure names the
 * step. The same vectors check the stand-ins' own implementation of the specification
 * (test/helpers/sigv4-reference.ts), which is what verifies pawl's requests in the other tests.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { signatureSteps } from '../../src/scan/registry/cloud/sigv4.js';
import { referenceSignature, sigv4Problem } from '../helpers/sigv4-reference.js';

// The suite's fixed inputs.
const CREDS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  source: 'suite',
};
const NOW = new Date(Date.UTC(2015, 7, 30, 12, 36, 0));
const DATE = '20150830T123600Z';
const SCOPE = '20150830/us-east-1/service/aws4_request';
const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

interface Vector {
  name: string;
  method: string;
  /** The request target as the suite's `.req` file has it. */
  target: string;
  headers: Record<string, string>;
  body: string;
  canonicalRequest: string;
  signature: string;
}

const VECTORS: Vector[] = [
  {
    name: 'get-vanilla',
    method: 'GET',
    target: '/',
    headers: {},
    body: '',
    canonicalRequest: `GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY}`,
    signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  },
  {
    name: 'get-vanilla-query-order-key-case',
    method: 'GET',
    target: '/?Param2=value2&Param1=value1',
    headers: {},
    body: '',
    canonicalRequest: `GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY}`,
    signature: 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
  },
  {
    name: 'get-vanilla-query-order-value',
    method: 'GET',
    target: '/?Param1=value2&Param1=value1',
    headers: {},
    body: '',
    canonicalRequest: `GET\n/\nParam1=value1&Param1=value2\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY}`,
    signature: '5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694',
  },
  {
    name: 'get-vanilla-utf8-query',
    method: 'GET',
    target: '/?%E1%88%B4=bar',
    headers: {},
    body: '',
    canonicalRequest: `GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY}`,
    signature: '2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04',
  },
  {
    name: 'get-unreserved',
    method: 'GET',
    target: '/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
    headers: {},
    body: '',
    canonicalRequest: `GET\n/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY}`,
    signature: '07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f',
  },
  {
    name: 'get-header-value-trim',
    method: 'GET',
    target: '/',
    headers: { 'My-Header1': ' value1', 'My-Header2': ' "a   b   c"' },
    body: '',
    canonicalRequest: `GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:"a b c"\nx-amz-date:${DATE}\n\nhost;my-header1;my-header2;x-amz-date\n${EMPTY}`,
    signature: 'acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736',
  },
  {
    name: 'post-x-www-form-urlencoded',
    method: 'POST',
    target: '/',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'Param1=value1',
    canonicalRequest: `POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\ncontent-type;host;x-amz-date\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e`,
    signature: 'ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a',
  },
];

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

describe("SigV4: AWS's signature test suite", () => {
  for (const v of VECTORS) {
    test(`${v.name}: canonical request, string to sign, signature`, () => {
      const steps = signatureSteps(
        {
          method: v.method,
          url: new URL(`https://example.amazonaws.com${v.target}`),
          headers: v.headers,
          body: v.body,
          region: 'us-east-1',
          service: 'service',
          now: NOW,
        },
        CREDS,
      );
      assert.equal(steps.canonicalRequest, v.canonicalRequest);
      assert.equal(steps.stringToSign, `AWS4-HMAC-SHA256\n${DATE}\n${SCOPE}\n${sha256(v.canonicalRequest)}`);
      assert.equal(steps.signature, v.signature);
      const signed = v.canonicalRequest.split('\n').at(-2);
      assert.equal(
        steps.headers.authorization,
        `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/${SCOPE}, SignedHeaders=${signed}, Signature=${v.signature}`,
      );
      assert.equal(steps.headers['x-amz-date'], DATE);
    });
  }

  test("the stand-ins' reference implementation gives the suite's answers too", () => {
    for (const v of VECTORS) {
      const headers = { ...v.headers, host: 'example.amazonaws.com', 'x-amz-date': DATE };
      const signedHeaders = Object.keys(headers)
        .map((h) => h.toLowerCase())
        .sort();
      const r = referenceSignature(
        { method: v.method, target: v.target, headers, body: v.body },
        { secret: CREDS.secretAccessKey, date: DATE, region: 'us-east-1', service: 'service', signedHeaders },
      );
      assert.equal(r.canonicalRequest, v.canonicalRequest, v.name);
      assert.equal(r.signature, v.signature, v.name);
    }
  });
});

describe('SigV4 canonical forms beyond the suite, checked by the reference implementation', () => {
  const sign = (
    target: string,
    headers: Record<string, string> = {},
    creds: typeof CREDS & { sessionToken?: string } = CREDS,
  ) =>
    signatureSteps(
      {
        method: 'GET',
        url: new URL(`https://example.amazonaws.com${target}`),
        headers,
        body: '',
        region: 'eu-west-1',
        service: 'ecr',
        now: NOW,
      },
      creds,
    );
  const accepted = (target: string, steps: ReturnType<typeof sign>) =>
    sigv4Problem(
      { method: 'GET', target, headers: steps.headers, body: '' },
      {
        keys: { AKIDEXAMPLE: CREDS.secretAccessKey },
        service: 'ecr',
        region: 'eu-west-1',
        now: NOW.getTime(),
      },
    );

  test("!'()* in the query are percent-encoded (encodeURIComponent leaves them)", () => {
    const target = "/?name=it's(a)*test!";
    const steps = sign(target);
    assert.equal(steps.canonicalRequest.split('\n')[2], 'name=it%27s%28a%29%2Atest%21');
    assert.equal(accepted(target, steps), undefined);
  });

  test('the query is sorted by name, then value, in byte order (upper case before lower case)', () => {
    const target = '/?b=2&a=2&B=1&a=1&a%20b=x';
    const steps = sign(target);
    assert.equal(steps.canonicalRequest.split('\n')[2], 'B=1&a=1&a=2&a%20b=x&b=2');
    assert.equal(accepted(target, steps), undefined);
  });

  test('header values are trimmed and inner runs of spaces folded to one; names lower-cased and sorted', () => {
    const steps = sign('/', { 'X-Zeta': '  last  ', 'X-Alpha': 'a    b  c' });
    assert.deepEqual(steps.canonicalRequest.split('\n').slice(3, 7), [
      'host:example.amazonaws.com',
      'x-alpha:a b c',
      'x-amz-date:20150830T123600Z',
      'x-zeta:last',
    ]);
    assert.match(steps.headers.authorization!, /SignedHeaders=host;x-alpha;x-amz-date;x-zeta,/);
  });

  test('each path segment is encoded again, as every service but S3 wants it', () => {
    const target = '/example%20space/%E1%88%B4/a~b';
    const steps = sign(target);
    assert.equal(steps.canonicalRequest.split('\n')[1], '/example%2520space/%25E1%2588%25B4/a~b');
    assert.equal(accepted(target, steps), undefined);
  });

  test('a session token is sent and signed as x-amz-security-token', () => {
    const steps = sign('/', {}, { ...CREDS, sessionToken: 'session-token-1' });
    assert.equal(steps.headers['x-amz-security-token'], 'session-token-1');
    assert.match(steps.headers.authorization!, /SignedHeaders=host;x-amz-date;x-amz-security-token,/);
    assert.equal(accepted('/', steps), undefined);
  });

  test('the reference refuses what a service refuses', () => {
    const steps = sign('/?a=1');
    const check = (target: string, headers: Record<string, string>, now = NOW.getTime()) =>
      sigv4Problem(
        { method: 'GET', target, headers, body: '' },
        { keys: { AKIDEXAMPLE: CREDS.secretAccessKey }, service: 'ecr', region: 'eu-west-1', now },
      );
    assert.equal(check('/?a=1', steps.headers), undefined);
    assert.equal(check('/?a=2', steps.headers), 'signature does not match');
    assert.match(check('/?a=1', steps.headers, NOW.getTime() + 6 * 60_000) ?? '', /Signature expired/);
    assert.equal(check('/?a=1', steps.headers, NOW.getTime() + 4 * 60_000), undefined);
    assert.match(check('/?a=1', { ...steps.headers, 'x-amz-date': '20150831T123600Z' }) ?? '', /scope's day/);
  });
});
