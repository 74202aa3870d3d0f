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
  parseIni,
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

describe("AWS's shared files", () => {
  test('the INI dialect: sections, key = value, comments, keys in any case, values as written', () => {
    const ini = parseIni(
      [
        '# a comment',
        '; another',
        '[default]',
        '# aws_access_key_id = commented out',
        '; region = commented out',
        'aws_access_key_id = AKIA1',
        'AWS_Secret_Access_Key=s3cr=t ',
        '  [ profile dev ]  ',
        'role_arn = arn:aws:iam::1:role/r',
        'region =',
        'orphan',
        '',
      ].join('\r\n'),
    );
    assert.deepEqual(Object.fromEntries(ini), {
      default: { aws_access_key_id: 'AKIA1', aws_secret_access_key: 's3cr=t' },
      'profile dev': { role_arn: 'arn:aws:iam::1:role/r', region: '' },
    });
    assert.deepEqual(Object.fromEntries(parseIni('key = before any section\n[a]\nk = v\n')), {
      a: { k: 'v' },
    });
  });

  /** Deps whose files are the given texts (any other path does not exist). */
  const withFiles = (
    files: Record<string, string>,
    env: Record<string, string>,
    fetch: typeof globalThis.fetch,
  ) =>
    defaultCloudDeps({
      env: { AWS_EC2_METADATA_DISABLED: 'true', ...env },
      homedir: '/home/u',
      readFile: async (p) =>
        p in files ? files[p]! : Promise.reject(Object.assign(new Error(`no ${p}`), { code: 'ENOENT' })),
      now: () => NOW,
      fetch,
    });
  const ECR_HOST = '123456789012.dkr.ecr.eu-west-1.amazonaws.com';

  test('~/.aws/credentials over ~/.aws/config for the same profile; [profile NAME] in config, [NAME] in credentials', async () => {
    const r = recording(() => ({ body: ecrAnswer(NOW / 1000 + 43200) }));
    const deps = withFiles(
      {
        '/home/u/.aws/credentials':
          '[dev]\naws_access_key_id = AKIAFROMCREDENTIALS\naws_secret_access_key = a\n',
        '/home/u/.aws/config':
          '[profile dev]\naws_access_key_id = AKIAFROMCONFIG\naws_secret_access_key = b\n[profile ops]\naws_access_key_id = AKIAOPS\naws_secret_access_key = c\n[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n',
      },
      { AWS_PROFILE: 'dev' },
      r.fetch,
    );
    const c = await cloudCredentialSource('aws', deps)(ECR_HOST, `https://${ECR_HOST}`);
    assert.match(r.calls[0]!.headers.authorization!, /Credential=AKIAFROMCREDENTIALS\//);
    assert.match(c.source, /AWS profile "dev"/);
    for (const [profile, key] of [
      ['ops', 'AKIAOPS'],
      [undefined, 'AKIADEFAULT'],
    ] as const) {
      const again = recording(() => ({ body: ecrAnswer(NOW / 1000 + 43200) }));
      const d = withFiles(
        {
          '/home/u/.aws/config':
            '[profile ops]\naws_access_key_id = AKIAOPS\naws_secret_access_key = c\n[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n',
        },
        profile ? { AWS_PROFILE: profile } : {},
        again.fetch,
      );
      await cloudCredentialSource('aws', d)(ECR_HOST, `https://${ECR_HOST}`);
      assert.match(again.calls[0]!.headers.authorization!, new RegExp(`Credential=${key}/`));
    }
  });

  test('an STS error names its code and message, XML entities decoded once', async () => {
    const r = recording(() => ({
      status: 403,
      body: '<ErrorResponse><Error><Code>AccessDenied</Code><Message>not &lt;allowed&gt; for &quot;r&quot; &amp;amp; more</Message></Error></ErrorResponse>',
    }));
    const deps = withFiles(
      { '/token': 'projected' },
      { AWS_ROLE_ARN: 'arn:aws:iam::1:role/r', AWS_WEB_IDENTITY_TOKEN_FILE: '/token' },
      r.fetch,
    );
    await assert.rejects(
      cloudCredentialSource('aws', deps)(ECR_HOST, `https://${ECR_HOST}`),
      (err: Error) =>
        err.message.includes('HTTP 403 AccessDenied: not <allowed> for "r" &amp; more') &&
        err.message.includes('https://sts.eu-west-1.amazonaws.com'),
    );
  });

  test('EC2 instance metadata at AWS_EC2_METADATA_SERVICE_ENDPOINT, a trailing slash dropped; the first role listed', async () => {
    const r = recording((url) => {
      if (url.pathname === '/latest/api/token') return { body: ' imds-token\n' };
      if (url.pathname === '/latest/meta-data/iam/security-credentials/')
        return { body: 'node-role\nother-role\n' };
      if (url.pathname === '/latest/meta-data/iam/security-credentials/node-role')
        return {
          body: JSON.stringify({
            AccessKeyId: 'ASIAIMDS',
            SecretAccessKey: 's',
            Token: 't',
            Expiration: '2026-11-30T16:00:00Z',
          }),
        };
      return { body: ecrAnswer(NOW / 1000 + 43200) };
    });
    const deps = defaultCloudDeps({
      env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://169.254.169.254/' },
      homedir: '/nonexistent',
      now: () => NOW,
      fetch: r.fetch,
    });
    await cloudCredentialSource('aws', deps)(ECR_HOST, `https://${ECR_HOST}`);
    assert.deepEqual(
      r.calls.map((c) => c.url),
      [
        'http://169.254.169.254/latest/api/token',
        'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
        'http://169.254.169.254/latest/meta-data/iam/security-credentials/node-role',
        'https://api.ecr.eu-west-1.amazonaws.com/',
      ],
    );
    assert.equal(r.calls[0]!.headers['x-aws-ec2-metadata-token-ttl-seconds'], '21600');
    assert.equal(r.calls[1]!.headers['x-aws-ec2-metadata-token'], 'imds-token');
    assert.match(r.calls[3]!.headers.authorization!, /Credential=ASIAIMDS\//);
    assert.equal(r.calls[3]!.headers['x-amz-security-token'], 't');
  });
});

describe('overridden endpoints, written as the SDKs accept them', () => {
  test('AZURE_AUTHORITY_HOST with or without a trailing slash; the tenant encoded', async () => {
    for (const authority of ['https://login.example.test', 'https://login.example.test/']) {
      const r = recording(() => ({ body: JSON.stringify({ access_token: 'e', expires_in: 60 }) }));
      await azureAccessToken(
        defaultCloudDeps({
          env: {
            AZURE_TENANT_ID: 'a/b',
            AZURE_CLIENT_ID: 'c',
            AZURE_CLIENT_SECRET: 's',
            AZURE_AUTHORITY_HOST: authority,
          },
          homedir: '/nonexistent',
          now: () => NOW,
          fetch: r.fetch,
        }),
        'r.azurecr.io',
      );
      assert.equal(r.calls[0]!.url, 'https://login.example.test/a%2Fb/oauth2/v2.0/token');
    }
  });

  test('GCE_METADATA_HOST as a bare host or as a URL', async () => {
    for (const [host, origin] of [
      ['169.254.169.254', 'http://169.254.169.254'],
      ['metadata.test:8080', 'http://metadata.test:8080'],
      ['http://127.0.0.1:9/', 'http://127.0.0.1:9'],
    ]) {
      const r = recording(() => ({ body: JSON.stringify({ access_token: 'ya29', expires_in: 60 }) }));
      await gcpAccessToken(
        defaultCloudDeps({
          env: { GCE_METADATA_HOST: host! },
          homedir: '/nonexistent',
          now: () => NOW,
          fetch: r.fetch,
        }),
      );
      assert.equal(
        new URL(r.calls[0]!.url).origin + new URL(r.calls[0]!.url).pathname,
        `${origin}/computeMetadata/v1/instance/service-accounts/default/token`,
      );
    }
  });

  test("gcloud's application_default_credentials.json under CLOUDSDK_CONFIG, else ~/.config/gcloud", async () => {
    const adc = JSON.stringify({
      type: 'authorized_user',
      client_id: 'i',
      client_secret: 's',
      refresh_token: 'r',
    });
    for (const [env, path] of [
      [{}, '/home/u/.config/gcloud/application_default_credentials.json'],
      [{ CLOUDSDK_CONFIG: '/etc/gcloud' }, '/etc/gcloud/application_default_credentials.json'],
    ] as const) {
      const r = recording(() => ({ body: JSON.stringify({ access_token: 'ya29.u', expires_in: 60 }) }));
      const t = await gcpAccessToken(
        defaultCloudDeps({
          env,
          homedir: '/home/u',
          readFile: async (p) =>
            p === path ? adc : Promise.reject(Object.assign(new Error('x'), { code: 'ENOENT' })),
          now: () => NOW,
          fetch: r.fetch,
        }),
      );
      assert.equal(t.token, 'ya29.u');
      assert.equal(r.calls[0]!.url, 'https://oauth2.googleapis.com/token');
      assert.equal(new URLSearchParams(r.calls[0]!.body).get('grant_type'), 'refresh_token');
    }
  });
});
