/**
 * `provider: aws | gcp | azure` end to end through pawl's own pieces: the config loader, the scan
 * clients, the cloud token exchange against the stand-ins, and the real registry (Debian's
 * docker-registry with htpasswd users named as each cloud names them). The registry is reached
 * under the cloud host names through a fetch that sends those hosts to 127.0.0.1 — the one fake
 * here, since a test cannot own amazonaws.com's DNS.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { createScanClients } from '../../src/scan/clients.js';
import { defaultCloudDeps, type CredentialSource } from '../../src/scan/registry/cloud/index.js';
import { createRegistryClient } from '../../src/scan/registry/client.js';
import { RegistryPool } from '../../src/scan/registry/pool.js';
import { parseRepositoryRef } from '../../src/scan/registry/reference.js';
import { silentLogger } from '../../src/util/log.js';
import { configDir } from '../config/fixtures.js';
import {
  fakeRefreshToken,
  serviceAccountKey,
  startAwsStandIn,
  startAzureStandIn,
  startGoogleStandIn,
  type StandIn,
} from '../helpers/cloud-stand-ins.js';
import { pushTags } from '../helpers/push.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';

const ECR = '123456789012.dkr.ecr.eu-west-1.amazonaws.com';
const GAR = 'europe-docker.pkg.dev';
const ACR = 'pawltest.azurecr.io';
const ECR_PASSWORD = 'ecr-password-from-token';
const GCP_TOKEN = 'ya29.stand-in-token';
const ACR_REFRESH = fakeRefreshToken(Math.floor(Date.now() / 1000) + 3 * 3600);

const repository = (
  name: string,
  image: string,
  provider: string,
): string => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: ${name}
  namespace: apps
spec:
  image: ${image}
  interval: 5m
  insecure: true
  provider: ${provider}
`;

describe('cloud providers against the real registry', () => {
  let reg: TestRegistry;
  let aws: StandIn;
  let google: StandIn;
  let azure: StandIn;
  /** Sends the cloud registry hosts to the local registry, and ACR's /oauth2/exchange to its stand-in. */
  let route: typeof fetch;
  let saJson = '';

  before(async () => {
    reg = await startRegistry({
      auth: 'htpasswd',
      users: {
        AWS: ECR_PASSWORD,
        oauth2accesstoken: GCP_TOKEN,
        '00000000-0000-0000-0000-000000000000': ACR_REFRESH,
      },
    });
    await pushTags(reg.url, 'org/app', ['v1', 'v2'], { auth: { username: 'AWS', password: ECR_PASSWORD } });
    const now = () => Date.now();
    aws = await startAwsStandIn({
      keys: { AKIASTATIC: 'static-secret-key-1' },
      issued: { accessKeyId: 'ASIAX', secretAccessKey: 'x', sessionToken: 'x' },
      ecrPassword: ECR_PASSWORD,
      now,
    });
    google = await startGoogleStandIn({ accessToken: GCP_TOKEN, serviceAccount: () => sa, now });
    const sa = serviceAccountKey(`${google.url}/token`);
    azure = await startAzureStandIn({
      tenant: 'tenant-1',
      clientId: 'client-1',
      clientSecret: 'sp-secret-1',
      entraToken: 'entra-access-token',
      registry: ACR,
      refreshToken: ACR_REFRESH,
    });
    route = (input, init) => {
      const u = new URL(input instanceof Request ? input.url : String(input));
      if ([ECR, GAR, ACR].includes(u.host)) {
        const target = new URL(u.pathname === '/oauth2/exchange' ? azure.url : reg.url);
        u.protocol = target.protocol;
        u.host = target.host;
      }
      return fetch(u, init);
    };
    saJson = sa.json;
  });
  after(async () => {
    await Promise.all([aws?.close(), google?.close(), azure?.close()]);
    await reg?.stop();
  });

  test('each provider lists the tags with the credentials its token exchange produced', async (t) => {
    const { dir, cleanup } = await configDir({
      'repos.yaml': [
        repository('ecr', `${ECR}/org/app`, 'aws'),
        repository('gar', `${GAR}/org/app`, 'gcp'),
        repository('acr', `${ACR}/org/app`, 'azure'),
      ].join('---\n'),
      'sa.json': saJson,
    });
    t.after(cleanup);
    const { config, problems } = await loadConfig([dir]);
    assert.deepEqual(problems, []);
    const cloud = defaultCloudDeps({
      fetch: route,
      homedir: dir,
      env: {
        AWS_ACCESS_KEY_ID: 'AKIASTATIC',
        AWS_SECRET_ACCESS_KEY: 'static-secret-key-1',
        AWS_ENDPOINT_URL_ECR: aws.url,
        GOOGLE_APPLICATION_CREDENTIALS: `${dir}/sa.json`,
        AZURE_TENANT_ID: 'tenant-1',
        AZURE_CLIENT_ID: 'client-1',
        AZURE_CLIENT_SECRET: 'sp-secret-1',
        AZURE_AUTHORITY_HOST: `${azure.url}/`,
      },
    });
    const clients = createScanClients(config, {
      log: silentLogger,
      cloud,
      extra: { fetch: route, pool: new RegistryPool(), dockerConfig: false },
    });
    for (const name of ['ecr', 'gar', 'acr']) {
      const repo = config.imageRepositories.get(`apps/${name}`)!;
      const list = await clients.client(repo).listTags(clients.reference(repo));
      assert.deepEqual(list.tags, ['v1', 'v2'], name);
      const recorded = JSON.stringify(list.responses);
      for (const secret of [ECR_PASSWORD, GCP_TOKEN, ACR_REFRESH])
        assert.ok(!recorded.includes(secret), `${name} recorded a secret`);
    }
    assert.equal(aws.requests.length, 1);
    assert.equal(google.requests.length, 1);
    assert.deepEqual(
      azure.requests.map((r) => r.path),
      ['/tenant-1/oauth2/v2.0/token', '/oauth2/exchange'],
    );
  });

  test('without the cloud identity the scan fails, naming the provider and what is missing', async () => {
    const { dir, cleanup } = await configDir({ 'repos.yaml': repository('ecr', `${ECR}/org/app`, 'aws') });
    try {
      const { config } = await loadConfig([dir]);
      const clients = createScanClients(config, {
        log: silentLogger,
        cloud: defaultCloudDeps({ fetch: route, homedir: dir, env: { AWS_EC2_METADATA_DISABLED: 'true' } }),
        extra: { fetch: route, pool: new RegistryPool(), dockerConfig: false },
      });
      const repo = config.imageRepositories.get('apps/ecr')!;
      await assert.rejects(
        clients.client(repo).listTags(clients.reference(repo)),
        /no AWS credentials found/,
      );
    } finally {
      await cleanup();
    }
  });

  test('credentials that expire are asked for again five minutes before, not on every request', async () => {
    let clock = Date.UTC(2026, 10, 30, 10, 0, 0);
    let calls = 0;
    const source: CredentialSource = async () => {
      calls++;
      return { username: 'AWS', password: ECR_PASSWORD, expiresAt: clock + 12 * 3600_000, source: 'test' };
    };
    const client = createRegistryClient({
      fetch: route,
      pool: new RegistryPool({ now: () => clock }),
      credentialSource: source,
      insecure: true,
    });
    const ref = parseRepositoryRef(`${ECR}/org/app`, { insecure: true });
    await client.listTags(ref);
    await client.listTags(ref);
    assert.equal(calls, 1);
    const expiry = clock + 12 * 3600_000;
    clock = expiry - 5 * 60_000 - 1; // a millisecond short of five minutes before: still good
    await client.listTags(ref);
    assert.equal(calls, 1);
    clock = expiry - 5 * 60_000; // five minutes before: renewed, once
    assert.deepEqual((await client.listTags(ref)).tags, ['v1', 'v2']);
    assert.equal(calls, 2);
    await client.listTags(ref);
    assert.equal(calls, 2, 'the renewed credentials are kept until five minutes before their own expiry');
  });
});
