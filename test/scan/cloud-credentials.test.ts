/**
 * `provider: aws | gcp | azure`: every token exchange runs against a local stand-in of the
 * cloud's endpoint (test/helpers/cloud-stand-ins.ts) that checks what the real one checks. No
 * test reaches a real cloud; the environment, files and endpoints are injected.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  cloudCredentialSource,
  defaultCloudDeps,
  providerHostProblem,
  signRequest,
  type CloudDeps,
} from '../../src/scan/registry/cloud/index.js';
import {
  fakeRefreshToken,
  serviceAccountKey,
  startAwsStandIn,
  startAzureStandIn,
  startGoogleStandIn,
  type ServiceAccountKey,
  type StandIn,
} from '../helpers/cloud-stand-ins.js';

const NOW = Date.UTC(2026, 10, 30, 10, 0, 0);
let home: string;
before(async () => {
  home = await mkdtemp(join(tmpdir(), 'pawl-cloud-'));
});
after(() => rm(home, { recursive: true, force: true }));

/** Deps with nothing from this machine: an empty home, only the given variables. */
function deps(env: Record<string, string>, endpoints: CloudDeps['endpoints'] = {}): CloudDeps {
  return defaultCloudDeps({ env, homedir: home, now: () => NOW, endpoints, timeoutMs: 5000 });
}

async function file(name: string, text: string): Promise<string> {
  const p = join(home, name);
  await mkdir(join(p, '..'), { recursive: true });
  await writeFile(p, text);
  return p;
}

describe('SigV4', () => {
  // The examples of AWS's documentation and signature test suite (get-vanilla; IAM ListUsers).
  const creds = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    source: 'doc',
  };
  const now = new Date(Date.UTC(2015, 7, 30, 12, 36, 0));
  test('matches the published signatures', () => {
    const vanilla = signRequest(
      {
        method: 'GET',
        url: new URL('https://example.amazonaws.com/'),
        headers: {},
        body: '',
        region: 'us-east-1',
        service: 'service',
        now,
      },
      creds,
    );
    assert.equal(
      vanilla.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
    const iam = signRequest(
      {
        method: 'GET',
        url: new URL('https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08'),
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
        body: '',
        region: 'us-east-1',
        service: 'iam',
        now,
      },
      creds,
    );
    assert.match(
      iam.authorization!,
      /Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7$/,
    );
    assert.equal(iam['x-amz-date'], '20150830T123600Z');
  });
});

describe('provider aws (ECR)', () => {
  const ECR = '123456789012.dkr.ecr.eu-west-1.amazonaws.com';
  const issued = {
    accessKeyId: 'ASIAISSUED',
    secretAccessKey: 'issued-secret-key-1',
    sessionToken: 'issued-session-token-1',
  };
  let aws: StandIn;
  let endpoints: CloudDeps['endpoints'];
  before(async () => {
    aws = await startAwsStandIn({
      keys: { AKIASTATIC: 'static-secret-key-1', AKIACI: 'ci-secret-key-1' },
      webIdentity: { token: 'eks-projected-token', roleArn: 'arn:aws:iam::123456789012:role/pawl' },
      issued,
      ecrPassword: 'ecr-password-from-token',
      metadataCredentials: {
        accessKeyId: 'ASIAMETA',
        secretAccessKey: 'meta-secret-1',
        sessionToken: 'meta-session-1',
      },
      containerToken: 'pod-identity-token',
      now: () => NOW,
    });
    endpoints = {
      awsSts: () => aws.url,
      awsEcr: () => aws.url,
      awsEcrPublic: aws.url,
      awsEcsHost: aws.url,
      awsImds: aws.url,
    };
  });
  after(() => aws.close());
  const ecr = (env: Record<string, string>, host = ECR) =>
    cloudCredentialSource('aws', deps({ AWS_EC2_METADATA_DISABLED: 'true', ...env }, endpoints))(
      host,
      `https://${host}`,
    );

  test('environment keys: a SigV4-signed GetAuthorizationToken in the registry region, Basic credentials for 12 hours', async () => {
    aws.requests.length = 0;
    const c = await ecr({ AWS_ACCESS_KEY_ID: 'AKIASTATIC', AWS_SECRET_ACCESS_KEY: 'static-secret-key-1' });
    assert.equal(c.username, 'AWS');
    assert.equal(c.password, 'ecr-password-from-token');
    assert.equal(c.expiresAt, NOW + 12 * 3600_000);
    assert.match(c.source, /provider aws .*AWS_ACCESS_KEY_ID/);
    const [req] = aws.requests;
    assert.equal(req?.headers['x-amz-target'], 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken');
    assert.match(
      req!.headers.authorization!,
      /Credential=AKIASTATIC\/20261130\/eu-west-1\/ecr\/aws4_request/,
    );
    assert.equal(req!.headers['x-amz-date'], '20261130T100000Z');
  });

  test('a wrong secret key is refused by the signature check, and the error names the source, not the key', async () => {
    await assert.rejects(
      ecr({ AWS_ACCESS_KEY_ID: 'AKIASTATIC', AWS_SECRET_ACCESS_KEY: 'not-the-secret' }),
      (err: Error) =>
        /ECR GetAuthorizationToken .* with the credentials from environment variables .*: HTTP 403 InvalidSignatureException/.test(
          err.message,
        ) && !err.message.includes('not-the-secret'),
    );
  });

  test('web identity (EKS IRSA): AssumeRoleWithWebIdentity, then ECR signed with the session', async () => {
    aws.requests.length = 0;
    const tokenFile = await file('irsa/token', 'eks-projected-token\n');
    const c = await ecr({
      AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/pawl',
    });
    assert.equal(c.password, 'ecr-password-from-token');
    const [sts, token] = aws.requests;
    const f = new URLSearchParams(sts!.body);
    assert.equal(f.get('Action'), 'AssumeRoleWithWebIdentity');
    assert.equal(f.get('WebIdentityToken'), 'eks-projected-token');
    assert.equal(f.get('RoleArn'), 'arn:aws:iam::123456789012:role/pawl');
    assert.equal(token!.headers['x-amz-security-token'], issued.sessionToken);
    assert.match(
      token!.headers.authorization!,
      /Credential=ASIAISSUED\/.*SignedHeaders=[^,]*x-amz-security-token/,
    );
  });

  test('shared files: AWS_PROFILE with role_arn and source_profile → signed AssumeRole', async () => {
    aws.requests.length = 0;
    const credentials = await file(
      'aws/credentials',
      '[ci]\naws_access_key_id = AKIACI\naws_secret_access_key = ci-secret-key-1\n',
    );
    const config = await file(
      'aws/config',
      '# deploy role\n[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = ci\n',
    );
    const c = await ecr({
      AWS_PROFILE: 'deploy',
      AWS_SHARED_CREDENTIALS_FILE: credentials,
      AWS_CONFIG_FILE: config,
    });
    assert.equal(c.username, 'AWS');
    const [sts] = aws.requests;
    assert.equal(new URLSearchParams(sts!.body).get('Action'), 'AssumeRole');
    assert.match(sts!.headers.authorization!, /Credential=AKIACI\/20261130\/eu-west-1\/sts\//);
    assert.match(
      c.source,
      /AWS profile "deploy" \(role arn:aws:iam::123456789012:role\/deploy from profile "ci"\)/,
    );
    await assert.rejects(
      ecr({ AWS_PROFILE: 'nope', AWS_SHARED_CREDENTIALS_FILE: credentials, AWS_CONFIG_FILE: config }),
      /AWS profile "nope" \(AWS_PROFILE\) is in neither/,
    );
  });

  test('the container endpoint (ECS, EKS Pod Identity) with its authorization token file', async () => {
    const tokenFile = await file('pod-identity/token', 'pod-identity-token');
    const c = await ecr({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${aws.url}/ecs/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile,
    });
    assert.match(c.source, /container credentials endpoint/);
    const relative = await ecr({
      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/ecs/v2/credentials/abc',
      AWS_CONTAINER_AUTHORIZATION_TOKEN: 'pod-identity-token',
    });
    assert.equal(relative.password, 'ecr-password-from-token');
  });

  test('EC2 instance metadata (IMDSv2: session token first) when nothing else is configured', async () => {
    aws.requests.length = 0;
    const c = await cloudCredentialSource('aws', deps({}, endpoints))(ECR, `https://${ECR}`);
    assert.match(c.source, /EC2 instance role pawl-node-role/);
    assert.deepEqual(
      aws.requests.slice(0, 3).map((r) => `${r.method} ${r.path}`),
      [
        'PUT /latest/api/token',
        'GET /latest/meta-data/iam/security-credentials/',
        'GET /latest/meta-data/iam/security-credentials/pawl-node-role',
      ],
    );
  });

  test('no credentials anywhere: says where it looked', async () => {
    await assert.rejects(
      ecr({}),
      /no AWS credentials found; pawl looked at AWS_ACCESS_KEY_ID.*EC2 instance metadata/,
    );
  });

  test('public.ecr.aws uses ECR Public in us-east-1', async () => {
    aws.requests.length = 0;
    const c = await ecr(
      { AWS_ACCESS_KEY_ID: 'AKIASTATIC', AWS_SECRET_ACCESS_KEY: 'static-secret-key-1' },
      'public.ecr.aws',
    );
    assert.equal(c.password, 'ecr-password-from-token');
    assert.equal(aws.requests[0]!.headers['x-amz-target'], 'SpencerFrontendService.GetAuthorizationToken');
    assert.match(aws.requests[0]!.headers.authorization!, /\/us-east-1\/ecr-public\//);
  });
});

describe('provider gcp (GCR, Artifact Registry)', () => {
  const HOST = 'europe-docker.pkg.dev';
  let google: StandIn;
  let sa: ServiceAccountKey;
  before(async () => {
    google = await startGoogleStandIn({
      accessToken: 'ya29.stand-in-token',
      serviceAccount: () => sa,
      refresh: { clientId: 'gcloud-client', clientSecret: 'gcloud-secret', refreshToken: '1//refresh' },
      now: () => NOW,
    });
    sa = serviceAccountKey(`${google.url}/token`);
  });
  after(() => google.close());
  const gcp = (env: Record<string, string>) =>
    cloudCredentialSource('gcp', deps(env, { gcpMetadata: 'http://127.0.0.1:9' }))(HOST, `https://${HOST}`);

  test('GOOGLE_APPLICATION_CREDENTIALS with a service account key: RS256 JWT grant, verified by the stand-in', async () => {
    const key = await file('gcp/sa.json', sa.json);
    const c = await gcp({ GOOGLE_APPLICATION_CREDENTIALS: key });
    assert.deepEqual(
      [c.username, c.password, c.expiresAt],
      ['oauth2accesstoken', 'ya29.stand-in-token', NOW + 3599_000],
    );
    assert.match(
      c.source,
      /service account pawl-reader@pawl-test\.iam\.gserviceaccount\.com from .*sa\.json \(GOOGLE_APPLICATION_CREDENTIALS\)/,
    );
  });

  test("gcloud's application_default_credentials.json (authorized_user) when no variable is set", async () => {
    const dir = join(home, 'gcloud');
    await file(
      'gcloud/application_default_credentials.json',
      JSON.stringify({
        type: 'authorized_user',
        client_id: 'gcloud-client',
        client_secret: 'gcloud-secret',
        refresh_token: '1//refresh',
        token_uri: `${google.url}/token`,
      }),
    );
    const c = await gcp({ CLOUDSDK_CONFIG: dir });
    assert.equal(c.password, 'ya29.stand-in-token');
  });

  test('the metadata server (GKE Workload Identity) with Metadata-Flavor: Google', async () => {
    google.requests.length = 0;
    const c = await cloudCredentialSource(
      'gcp',
      deps({ GCE_METADATA_HOST: google.url.replace('http://', '') }),
    )(HOST, `https://${HOST}`);
    assert.equal(c.password, 'ya29.stand-in-token');
    assert.match(
      google.requests[0]!.path,
      /^\/computeMetadata\/v1\/instance\/service-accounts\/default\/token\?scopes=https%3A%2F%2Fwww\.googleapis\.com%2Fauth%2Fcloud-platform/,
    );
  });

  test('a key the endpoint refuses, and an unsupported file type, are clear errors without secrets', async () => {
    const other = serviceAccountKey(`${google.url}/token`);
    const key = await file('gcp/other.json', other.json);
    await assert.rejects(
      gcp({ GOOGLE_APPLICATION_CREDENTIALS: key }),
      (err: Error) =>
        /Google token endpoint .* \(JWT grant for .*\): HTTP 400: invalid_grant: Invalid JWT Signature\./.test(
          err.message,
        ) && !err.message.includes('PRIVATE KEY'),
    );
    const ext = await file('gcp/ext.json', JSON.stringify({ type: 'external_account' }));
    await assert.rejects(
      gcp({ GOOGLE_APPLICATION_CREDENTIALS: ext }),
      /type "external_account"; pawl reads service_account and authorized_user/,
    );
  });

  test('nothing configured and no metadata server: says where it looked', async () => {
    await assert.rejects(
      gcp({ CLOUDSDK_CONFIG: join(home, 'none') }),
      /no Google credentials found: GOOGLE_APPLICATION_CREDENTIALS is not set, there is no .*application_default_credentials\.json, and the metadata server did not answer/,
    );
  });
});

describe('provider azure (ACR)', () => {
  const HOST = 'pawltest.azurecr.io';
  const refresh = fakeRefreshToken(Math.floor(NOW / 1000) + 3 * 3600);
  let azure: StandIn;
  before(async () => {
    azure = await startAzureStandIn({
      tenant: 'tenant-1',
      clientId: 'client-1',
      clientSecret: 'sp-secret-1',
      federatedToken: 'federated-sa-token',
      managedIdentity: true,
      entraToken: 'entra-access-token',
      registry: HOST,
      refreshToken: refresh,
    });
  });
  after(() => azure.close());
  // The registry's origin is the stand-in: the exchange is ACR's own endpoint.
  const acr = (env: Record<string, string>) =>
    cloudCredentialSource(
      'azure',
      deps({ AZURE_AUTHORITY_HOST: `${azure.url}/`, ...env }, { azureImds: azure.url }),
    )(HOST, azure.url);

  test('service principal: client_credentials at Entra, then /oauth2/exchange for an ACR refresh token', async () => {
    azure.requests.length = 0;
    const c = await acr({
      AZURE_TENANT_ID: 'tenant-1',
      AZURE_CLIENT_ID: 'client-1',
      AZURE_CLIENT_SECRET: 'sp-secret-1',
    });
    assert.deepEqual(
      [c.username, c.password, c.expiresAt],
      ['00000000-0000-0000-0000-000000000000', refresh, NOW + 3 * 3600_000],
    );
    const [token, exchange] = azure.requests;
    assert.equal(
      new URLSearchParams(token!.body).get('scope'),
      'https://containerregistry.azure.net/.default',
    );
    const f = new URLSearchParams(exchange!.body);
    assert.deepEqual(
      [f.get('grant_type'), f.get('service'), f.get('access_token'), f.get('tenant')],
      ['access_token', HOST, 'entra-access-token', 'tenant-1'],
    );
  });

  test('workload identity: the federated token file is the client assertion', async () => {
    azure.requests.length = 0;
    const tokenFile = await file('azure/token', 'federated-sa-token\n');
    const c = await acr({
      AZURE_TENANT_ID: 'tenant-1',
      AZURE_CLIENT_ID: 'client-1',
      AZURE_FEDERATED_TOKEN_FILE: tokenFile,
    });
    assert.match(c.source, /workload identity client-1/);
    assert.equal(new URLSearchParams(azure.requests[0]!.body).get('client_assertion'), 'federated-sa-token');
  });

  test('managed identity through instance metadata when no variables are set', async () => {
    const c = await acr({});
    assert.equal(c.password, refresh);
    assert.match(c.source, /managed identity/);
  });

  test('a wrong client secret: Entra error code in the message, the secret nowhere', async () => {
    await assert.rejects(
      acr({
        AZURE_TENANT_ID: 'tenant-1',
        AZURE_CLIENT_ID: 'client-1',
        AZURE_CLIENT_SECRET: 'wrong-secret-9',
      }),
      (err: Error) =>
        /refused service principal client-1 .*AADSTS7000215/.test(err.message) &&
        !err.message.includes('wrong-secret-9'),
    );
  });
});

describe("registry hosts each provider accepts (Flux's patterns)", () => {
  test('aws, gcp, azure', () => {
    assert.equal(providerHostProblem('aws', '123456789012.dkr.ecr.eu-west-1.amazonaws.com'), undefined);
    assert.equal(providerHostProblem('aws', '123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn'), undefined);
    assert.equal(providerHostProblem('aws', 'public.ecr.aws'), undefined);
    assert.match(providerHostProblem('aws', 'ghcr.io') ?? '', /provider aws needs an Amazon ECR image/);
    assert.equal(providerHostProblem('gcp', 'gcr.io'), undefined);
    assert.equal(providerHostProblem('gcp', 'eu.gcr.io'), undefined);
    assert.equal(providerHostProblem('gcp', 'us-central1-docker.pkg.dev'), undefined);
    assert.match(providerHostProblem('gcp', 'docker.io') ?? '', /provider gcp needs a Google registry/);
    assert.equal(providerHostProblem('azure', 'pawltest.azurecr.io'), undefined);
    assert.match(
      providerHostProblem('azure', 'azurecr.io.example.com') ?? '',
      /provider azure needs an Azure Container Registry/,
    );
  });
});
