/**
 * Where each provider's token calls go and how long their answers last, as table tests against
 * the clouds' documentation: the default endpoints of each partition (China's DNS suffix
 * `amazonaws.com.cn`, Azure's national clouds), Flux's registry host patterns, and lifetimes
 * in the units each service uses (`expires_in` seconds from now, `expires_on` and ECR's
 * `expiresAt` seconds since the epoch). The calls are answered by a recording fetch: the
 * default endpoints are real cloud hosts, which a test cannot reach.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  azureAccessToken,
  cloudCredentialSource,
  defaultCloudDeps,
  gcpAccessToken,
  providerHostProblem,
} from '../../src/scan/registry/cloud/index.js';
import { ecrRegion } from '../../src/image/index.js';

const NOW = Date.UTC(2026, 10, 30, 10, 0, 0);

interface Call {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A fetch that records each call and answers it with `answer(url)`. */
function recording(answer: (url: URL) => { status?: number; body: string }): {
  fetch: typeof fetch;
  calls: Call[];
} {
  const calls: Call[] = [];
  const f = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    calls.push({
      url: url.toString(),
      headers: { ...(init?.headers as Record<string, string>) },
      body: typeof init?.body === 'string' ? init.body : '',
    });
    const a = answer(url);
    return new Response(a.body, { status: a.status ?? 200 });
  }) as typeof fetch;
  return { fetch: f, calls };
}

const ecrAnswer = (expiresAt: number) =>
  JSON.stringify({
    authorizationData: [{ authorizationToken: Buffer.from('AWS:pw').toString('base64'), expiresAt }],
  });

const stsAnswer = (expires: string) =>
  `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken><Expiration>${expires}</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`;

const staticKeys = {
  AWS_ACCESS_KEY_ID: 'AKIA1',
  AWS_SECRET_ACCESS_KEY: 'secret-1',
  AWS_EC2_METADATA_DISABLED: 'true',
};

describe('provider aws: endpoints of each partition', () => {
  const cases: { host: string; api: string; scope: string }[] = [
    {
      host: '123456789012.dkr.ecr.eu-west-1.amazonaws.com',
      api: 'https://api.ecr.eu-west-1.amazonaws.com/',
      scope: 'eu-west-1/ecr',
    },
    {
      host: '123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn',
      api: 'https://api.ecr.cn-north-1.amazonaws.com.cn/',
      scope: 'cn-north-1/ecr',
    },
    {
      host: '123456789012.dkr.ecr.cn-northwest-1.amazonaws.com.cn',
      api: 'https://api.ecr.cn-northwest-1.amazonaws.com.cn/',
      scope: 'cn-northwest-1/ecr',
    },
    {
      host: '123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com',
      api: 'https://api.ecr.us-gov-west-1.amazonaws.com/',
      scope: 'us-gov-west-1/ecr',
    },
    {
      host: 'public.ecr.aws',
      api: 'https://api.ecr-public.us-east-1.amazonaws.com/',
      scope: 'us-east-1/ecr-public',
    },
  ];
  for (const c of cases) {
    test(`${c.host}: GetAuthorizationToken at ${c.api}, signed for ${c.scope}`, async () => {
      const r = recording(() => ({
        body:
          c.host === 'public.ecr.aws'
            ? JSON.stringify({
                authorizationData: {
                  authorizationToken: Buffer.from('AWS:pw').toString('base64'),
                  expiresAt: NOW / 1000 + 43200,
                },
              })
            : ecrAnswer(NOW / 1000 + 43200),
      }));
      const deps = defaultCloudDeps({
        env: staticKeys,
        homedir: '/nonexistent',
        now: () => NOW,
        fetch: r.fetch,
      });
      const creds = await cloudCredentialSource('aws', deps)(c.host, `https://${c.host}`);
      assert.deepEqual(
        r.calls.map((x) => x.url),
        [c.api],
      );
      assert.match(r.calls[0]!.headers.authorization!, new RegExp(`/20261130/${c.scope}/aws4_request,`));
      assert.equal(r.calls[0]!.headers.host, new URL(c.api).host);
      // ECR's expiresAt is seconds since the epoch.
      assert.equal(creds.expiresAt, NOW + 43200_000);
    });
  }

  test('web identity in a China region asks STS at sts.REGION.amazonaws.com.cn, and its Expiration is read', async () => {
    const r = recording((url) =>
      url.hostname.startsWith('sts.')
        ? { body: stsAnswer('2026-11-30T11:00:00Z') }
        : { body: ecrAnswer(NOW / 1000 + 43200) },
    );
    const deps = defaultCloudDeps({
      env: {
        AWS_ROLE_ARN: 'arn:aws-cn:iam::1:role/r',
        AWS_WEB_IDENTITY_TOKEN_FILE: '/token',
        AWS_EC2_METADATA_DISABLED: 'true',
      },
      homedir: '/nonexistent',
      readFile: async (p) =>
        p === '/token'
          ? ' projected-token \n'
          : Promise.reject(Object.assign(new Error('x'), { code: 'ENOENT' })),
      now: () => NOW,
      fetch: r.fetch,
    });
    await cloudCredentialSource('aws', deps)('1.dkr.ecr.cn-north-1.amazonaws.com.cn', 'https://x');
    assert.deepEqual(
      r.calls.map((x) => x.url),
      ['https://sts.cn-north-1.amazonaws.com.cn/', 'https://api.ecr.cn-north-1.amazonaws.com.cn/'],
    );
    const f = new URLSearchParams(r.calls[0]!.body);
    assert.equal(f.get('WebIdentityToken'), 'projected-token', 'the token file is read trimmed');
    assert.match(r.calls[1]!.headers.authorization!, /Credential=ASIA1\//);
  });
});

describe("Flux's registry host patterns", () => {
  const table: [provider: 'aws' | 'gcp' | 'azure', host: string, ok: boolean][] = [
    ['aws', '123456789012.dkr.ecr.eu-west-1.amazonaws.com', true],
    ['aws', '123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn', true],
    ['aws', '123456789012.dkr.ecr-fips.us-east-1.amazonaws.com', true],
    ['aws', '123456789012.dkr-ecr.eu-west-1.on.aws', true],
    ['aws', 'public.ecr.aws', true],
    ['aws', 'abc.dkr.ecr.eu-west-1.amazonaws.com', false],
    ['aws', '123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example', false],
    ['aws', 'x123456789012.dkr.ecr.eu-west-1.amazonaws.com', false],
    ['aws', '123456789012.dkr.ecr.amazonaws.com', false],
    ['aws', 'ghcr.io', false],
    ['gcp', 'gcr.io', true],
    ['gcp', 'eu.gcr.io', true],
    ['gcp', 'europe-docker.pkg.dev', true],
    ['gcp', 'us-central1-docker.pkg.dev', true],
    ['gcp', 'docker.pkg.dev', false],
    ['gcp', 'evilgcr.io', false],
    ['gcp', 'gcr.io.evil.example', false],
    ['gcp', 'europe-docker.pkg.dev.evil.example', false],
    ['azure', 'pawltest.azurecr.io', true],
    ['azure', 'pawltest.azurecr.cn', true],
    ['azure', 'pawltest.azurecr.us', true],
    ['azure', 'pawltest.azurecr.de', true],
    ['azure', 'azurecr.io', false],
    ['azure', 'pawltest.azurecr.io.evil.example', false],
    ['azure', 'pawltest.azurecr.com', false],
  ];
  for (const [provider, host, ok] of table) {
    test(`${provider} ${ok ? 'accepts' : 'refuses'} ${host}`, () => {
      assert.equal(providerHostProblem(provider, host) === undefined, ok);
    });
  }

  test("the region is the host's region part", () => {
    assert.equal(ecrRegion('123456789012.dkr.ecr.eu-west-1.amazonaws.com'), 'eu-west-1');
    assert.equal(ecrRegion('123456789012.dkr.ecr-fips.us-gov-east-1.amazonaws.com'), 'us-gov-east-1');
    assert.equal(ecrRegion('123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn'), 'cn-north-1');
    assert.equal(ecrRegion('public.ecr.aws'), 'us-east-1');
    assert.equal(ecrRegion('ghcr.io'), undefined);
  });
});

describe('provider azure: national clouds and lifetimes', () => {
  const entra = (expiresIn: number) =>
    recording((url) =>
      url.pathname.endsWith('/oauth2/v2.0/token')
        ? { body: JSON.stringify({ access_token: 'entra-1', expires_in: expiresIn, token_type: 'Bearer' }) }
        : { status: 404, body: '' },
    );
  const sp = { AZURE_TENANT_ID: 'tenant-1', AZURE_CLIENT_ID: 'client-1', AZURE_CLIENT_SECRET: 'secret-1' };
  const cases: [host: string, authority: string, scope: string][] = [
    ['r.azurecr.io', 'https://login.microsoftonline.com/', 'https://containerregistry.azure.net/.default'],
    ['r.azurecr.cn', 'https://login.chinacloudapi.cn/', 'https://containerregistry.azure.cn/.default'],
    ['r.azurecr.us', 'https://login.microsoftonline.us/', 'https://containerregistry.azure.us/.default'],
  ];
  for (const [host, authority, scope] of cases) {
    test(`${host}: Entra at ${authority} for ${scope}; expires_in is seconds from now`, async () => {
      const r = entra(3599);
      const t = await azureAccessToken(
        defaultCloudDeps({ env: sp, homedir: '/nonexistent', now: () => NOW, fetch: r.fetch }),
        host,
      );
      assert.deepEqual(
        r.calls.map((c) => c.url),
        [`${authority}tenant-1/oauth2/v2.0/token`],
      );
      const f = new URLSearchParams(r.calls[0]!.body);
      assert.deepEqual(
        [f.get('scope'), f.get('grant_type'), f.get('client_id'), f.get('client_secret')],
        [scope, 'client_credentials', 'client-1', 'secret-1'],
      );
      assert.equal(t.token, 'entra-1');
      assert.equal(t.expiresAt, NOW + 3599_000);
    });
  }

  test("managed identity: the cloud's resource, and expires_on read as seconds since the epoch", async () => {
    const r = recording(() => ({
      body: JSON.stringify({ access_token: 'mi-1', expires_on: String(NOW / 1000 + 3600) }),
    }));
    const t = await azureAccessToken(
      defaultCloudDeps({
        env: { AZURE_CLIENT_ID: 'uami-1' },
        homedir: '/nonexistent',
        now: () => NOW,
        fetch: r.fetch,
      }),
      'r.azurecr.cn',
    );
    const url = new URL(r.calls[0]!.url);
    assert.equal(url.origin + url.pathname, 'http://169.254.169.254/metadata/identity/oauth2/token');
    assert.deepEqual(
      [url.searchParams.get('resource'), url.searchParams.get('client_id'), r.calls[0]!.headers.metadata],
      ['https://containerregistry.azure.cn', 'uami-1', 'true'],
    );
    assert.equal(t.expiresAt, NOW + 3600_000);
  });
});

describe('provider gcp: lifetimes', () => {
  test('the metadata server: expires_in is seconds from now; the scopes are asked for', async () => {
    const r = recording(() => ({ body: JSON.stringify({ access_token: 'ya29.m', expires_in: 1800 }) }));
    const t = await gcpAccessToken(
      defaultCloudDeps({ env: {}, homedir: '/nonexistent', now: () => NOW, fetch: r.fetch }),
    );
    assert.equal(t.expiresAt, NOW + 1800_000);
    const url = new URL(r.calls[0]!.url);
    assert.equal(url.host, 'metadata.google.internal');
    assert.equal(
      url.searchParams.get('scopes'),
      'https://www.googleapis.com/auth/cloud-platform,https://www.googleapis.com/auth/userinfo.email',
    );
    assert.equal(r.calls[0]!.headers['metadata-flavor'], 'Google');
  });
});
