/**
 * Local stand-ins, on 127.0.0.1, for the token endpoints of AWS (STS, ECR, ECR Public, EC2 and
 * ECS metadata), Google (OAuth2 token endpoint, GCE metadata server) and Azure (Entra ID token
 * endpoint, instance metadata, ACR's /oauth2/exchange). Each answers in the cloud's documented
 * wire format, checks what a real one checks (signatures — SigV4 with its own implementation of
 * the specification, test/helpers/sigv4-reference.ts —, grant fields, secrets, headers), and
 * records every request so the tests can assert what pawl sent. They are not the cloud: see
 * docs/registries.md for what was and was not tried against the real services.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { sigv4Problem } from './sigv4-reference.js';

export interface Recorded {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface StandIn {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

type Handler = (req: Recorded, res: ServerResponse) => void;

export async function startStandIn(handler: Handler): Promise<StandIn> {
  const requests: Recorded[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const r: Recorded = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(r);
      try {
        handler(r, res);
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const send = (res: ServerResponse, status: number, body: string, type = 'application/json'): void =>
  void res.writeHead(status, { 'content-type': type }).end(body);

// ------------------------------------------------------------------------------------ AWS

export interface AwsStandInOptions {
  /** Access keys the stand-in accepts on signed calls: id → secret. */
  keys: Record<string, string>;
  /** Web identity tokens STS accepts, and the role each may assume. */
  webIdentity?: { token: string; roleArn: string };
  /** What STS hands out (AssumeRole and AssumeRoleWithWebIdentity). */
  issued: { accessKeyId: string; secretAccessKey: string; sessionToken: string };
  /** ECR's answer: base64 of `AWS:password`. */
  ecrPassword: string;
  /** Credentials served by the EC2 and ECS metadata endpoints. */
  metadataCredentials?: { accessKeyId: string; secretAccessKey: string; sessionToken: string };
  /** Required `authorization` header value on the ECS endpoint (EKS Pod Identity). */
  containerToken?: string;
  now: () => number;
}

/** A recorded request as the SigV4 reference reads it. */
const wire = (r: Recorded) => ({ method: r.method, target: r.path, headers: r.headers, body: r.body });

const stsXml = (action: string, c: AwsStandInOptions['issued'], expires: number): string =>
  `<${action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><${action}Result><Credentials>` +
  `<AccessKeyId>${c.accessKeyId}</AccessKeyId><SecretAccessKey>${c.secretAccessKey}</SecretAccessKey>` +
  `<SessionToken>${c.sessionToken}</SessionToken><Expiration>${new Date(expires).toISOString()}</Expiration>` +
  `</Credentials></${action}Result></${action}Response>`;

const stsError = (code: string, message: string): string =>
  `<ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error></ErrorResponse>`;

/**
 * One server for STS (`POST /` with `Action=`), ECR and ECR Public (`POST /` with
 * `x-amz-target`), EC2 instance metadata (`/latest/…`) and the ECS credentials endpoint
 * (`GET /ecs/…`). The region is taken from the signature's scope.
 */
export async function startAwsStandIn(o: AwsStandInOptions): Promise<StandIn & { origin: string }> {
  const keys = (): Record<string, string> => ({
    ...o.keys,
    [o.issued.accessKeyId]: o.issued.secretAccessKey,
    ...(o.metadataCredentials
      ? { [o.metadataCredentials.accessKeyId]: o.metadataCredentials.secretAccessKey }
      : {}),
  });
  let origin = '';
  const s = await startStandIn((req, res) => {
    if (req.path === '/' && req.method === 'POST' && req.headers['x-amz-target']) {
      const target = req.headers['x-amz-target'];
      const isPublic = target === 'SpencerFrontendService.GetAuthorizationToken';
      if (!isPublic && target !== 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken')
        return send(res, 400, JSON.stringify({ __type: 'UnknownOperationException' }));
      if (req.headers['content-type'] !== 'application/x-amz-json-1.1')
        return send(res, 400, JSON.stringify({ __type: 'SerializationException' }));
      const region = /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const problem = sigv4Problem(wire(req), {
        keys: keys(),
        service: isPublic ? 'ecr-public' : 'ecr',
        region: isPublic ? 'us-east-1' : region,
        now: o.now(),
      });
      if (problem)
        return send(
          res,
          403,
          JSON.stringify({ __type: 'com.amazon.coral.service#InvalidSignatureException', message: problem }),
        );
      const data = {
        authorizationToken: Buffer.from(`AWS:${o.ecrPassword}`).toString('base64'),
        expiresAt: (o.now() + 12 * 3600_000) / 1000,
        ...(isPublic ? {} : { proxyEndpoint: `https://registry.${region}` }),
      };
      return send(res, 200, JSON.stringify({ authorizationData: isPublic ? data : [data] }));
    }
    if (req.path === '/' && req.method === 'POST') {
      const f = new URLSearchParams(req.body);
      const expires = o.now() + 3600_000;
      if (f.get('Version') !== '2011-06-15')
        return send(res, 400, stsError('InvalidParameterValue', 'Version'), 'text/xml');
      if (f.get('Action') === 'AssumeRoleWithWebIdentity') {
        const w = o.webIdentity;
        if (!w || f.get('WebIdentityToken') !== w.token)
          return send(res, 400, stsError('InvalidIdentityToken', 'token is not valid'), 'text/xml');
        if (f.get('RoleArn') !== w.roleArn || !f.get('RoleSessionName'))
          return send(
            res,
            403,
            stsError('AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity'),
            'text/xml',
          );
        return send(res, 200, stsXml('AssumeRoleWithWebIdentity', o.issued, expires), 'text/xml');
      }
      if (f.get('Action') === 'AssumeRole') {
        const region = /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '';
        const problem = sigv4Problem(wire(req), { keys: o.keys, service: 'sts', region, now: o.now() });
        if (problem) return send(res, 403, stsError('SignatureDoesNotMatch', problem), 'text/xml');
        return send(res, 200, stsXml('AssumeRole', o.issued, expires), 'text/xml');
      }
      return send(res, 400, stsError('InvalidAction', 'unknown action'), 'text/xml');
    }
    const m = o.metadataCredentials;
    const metadataAnswer = (): string =>
      JSON.stringify({
        Code: 'Success',
        AccessKeyId: m!.accessKeyId,
        SecretAccessKey: m!.secretAccessKey,
        Token: m!.sessionToken,
        Expiration: new Date(o.now() + 6 * 3600_000).toISOString(),
      });
    if (req.path === '/latest/api/token' && req.method === 'PUT' && m) {
      if (!req.headers['x-aws-ec2-metadata-token-ttl-seconds']) return send(res, 400, '');
      return send(res, 200, 'imds-session-token', 'text/plain');
    }
    if (req.path.startsWith('/latest/meta-data/iam/security-credentials/') && m) {
      if (req.headers['x-aws-ec2-metadata-token'] !== 'imds-session-token') return send(res, 401, '');
      const role = req.path.slice('/latest/meta-data/iam/security-credentials/'.length);
      if (role === '') return send(res, 200, 'pawl-node-role', 'text/plain');
      if (role !== 'pawl-node-role') return send(res, 404, '');
      return send(res, 200, metadataAnswer());
    }
    if (req.path.startsWith('/ecs/') && m) {
      if (o.containerToken !== undefined && req.headers.authorization !== o.containerToken)
        return send(res, 401, '');
      return send(res, 200, metadataAnswer());
    }
    send(res, 404, '');
  });
  origin = s.url;
  return { ...s, origin };
}

// ------------------------------------------------------------------------------------ Google

export interface ServiceAccountKey {
  json: string;
  publicKey: KeyObject;
  email: string;
}

/** A service account key file as the Google console writes it, with `token_uri` pointing at `tokenUri`. */
export function serviceAccountKey(tokenUri: string): ServiceAccountKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const email = 'pawl-reader@pawl-test.iam.gserviceaccount.com';
  const json = JSON.stringify({
    type: 'service_account',
    project_id: 'pawl-test',
    private_key_id: 'key-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: email,
    client_id: '1234567890',
    token_uri: tokenUri,
  });
  return { json, publicKey, email };
}

/**
 * Google's OAuth2 token endpoint (`POST /token`: JWT bearer grant verified with the service
 * account's public key, refresh grant checked against `refresh`) and the GCE metadata server
 * (`/computeMetadata/v1/…/token`, only with `Metadata-Flavor: Google`).
 */
export async function startGoogleStandIn(o: {
  accessToken: string;
  serviceAccount?: () => ServiceAccountKey;
  refresh?: { clientId: string; clientSecret: string; refreshToken: string };
  now: () => number;
}): Promise<StandIn> {
  let origin = '';
  const s = await startStandIn((req, res) => {
    const ok = (): void =>
      send(res, 200, JSON.stringify({ access_token: o.accessToken, expires_in: 3599, token_type: 'Bearer' }));
    const bad = (error: string, description: string): void =>
      send(res, 400, JSON.stringify({ error, error_description: description }));
    if (req.path === '/token' && req.method === 'POST') {
      const f = new URLSearchParams(req.body);
      if (f.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
        const sa = o.serviceAccount?.();
        const parts = (f.get('assertion') ?? '').split('.');
        if (!sa || parts.length !== 3) return bad('invalid_grant', 'Invalid JWT');
        const good = verify(
          'RSA-SHA256',
          Buffer.from(`${parts[0]}.${parts[1]}`),
          sa.publicKey,
          Buffer.from(parts[2]!, 'base64url'),
        );
        if (!good) return bad('invalid_grant', 'Invalid JWT Signature.');
        const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<
          string,
          unknown
        >;
        const now = Math.floor(o.now() / 1000);
        if (claims.iss !== sa.email || claims.aud !== `${origin}/token`)
          return bad('invalid_grant', 'Invalid JWT claims');
        if (
          typeof claims.iat !== 'number' ||
          typeof claims.exp !== 'number' ||
          claims.exp <= now ||
          claims.iat > now + 60 ||
          claims.exp - claims.iat > 3600
        )
          return bad('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes)');
        if (!String(claims.scope).split(' ').includes('https://www.googleapis.com/auth/cloud-platform'))
          return bad('invalid_scope', 'missing cloud-platform');
        return ok();
      }
      if (f.get('grant_type') === 'refresh_token') {
        const r = o.refresh;
        if (
          !r ||
          f.get('client_id') !== r.clientId ||
          f.get('client_secret') !== r.clientSecret ||
          f.get('refresh_token') !== r.refreshToken
        )
          return bad('invalid_grant', 'Bad Request');
        return ok();
      }
      return bad('unsupported_grant_type', 'Invalid grant_type');
    }
    if (req.path.startsWith('/computeMetadata/v1/instance/service-accounts/default/token')) {
      if (req.headers['metadata-flavor'] !== 'Google')
        return send(res, 403, 'Missing Metadata-Flavor:Google header.', 'text/plain');
      return ok();
    }
    send(res, 404, '');
  });
  origin = s.url;
  return s;
}

// ------------------------------------------------------------------------------------ Azure

/**
 * Entra ID's token endpoint (`POST /TENANT/oauth2/v2.0/token`, client secret or federated client
 * assertion), the instance metadata service (managed identity) and ACR's `POST /oauth2/exchange`,
 * which accepts only the Entra token this stand-in issued and returns `refreshToken`.
 */
export async function startAzureStandIn(o: {
  tenant: string;
  clientId: string;
  clientSecret?: string;
  federatedToken?: string;
  managedIdentity?: boolean;
  entraToken: string;
  registry: string;
  refreshToken: string;
}): Promise<StandIn> {
  return startStandIn((req, res) => {
    const bad = (status: number, error: string, description: string): void =>
      send(res, status, JSON.stringify({ error, error_description: description }));
    const entra = (): void =>
      send(res, 200, JSON.stringify({ token_type: 'Bearer', expires_in: 3599, access_token: o.entraToken }));
    if (req.method === 'POST' && req.path === `/${o.tenant}/oauth2/v2.0/token`) {
      const f = new URLSearchParams(req.body);
      if (f.get('grant_type') !== 'client_credentials')
        return bad(400, 'unsupported_grant_type', 'AADSTS70003');
      if (f.get('client_id') !== o.clientId)
        return bad(400, 'unauthorized_client', 'AADSTS700016: Application not found');
      if (f.get('scope') !== 'https://containerregistry.azure.net/.default')
        return bad(400, 'invalid_scope', 'AADSTS70011');
      if (f.has('client_secret')) {
        if (o.clientSecret === undefined || f.get('client_secret') !== o.clientSecret)
          return bad(401, 'invalid_client', 'AADSTS7000215: Invalid client secret provided.');
        return entra();
      }
      if (f.get('client_assertion_type') === 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') {
        if (o.federatedToken === undefined || f.get('client_assertion') !== o.federatedToken)
          return bad(400, 'invalid_client', 'AADSTS700213: No matching federated identity record found');
        return entra();
      }
      return bad(401, 'invalid_client', 'AADSTS7000218: client_assertion or client_secret required');
    }
    if (req.method === 'GET' && req.path.startsWith('/metadata/identity/oauth2/token') && o.managedIdentity) {
      if (req.headers.metadata !== 'true')
        return bad(400, 'invalid_request', 'Required metadata header not specified');
      const q = new URL(req.path, 'http://x').searchParams;
      if (q.get('resource') !== 'https://containerregistry.azure.net')
        return bad(400, 'invalid_resource', 'AADSTS500011');
      return send(
        res,
        200,
        JSON.stringify({
          access_token: o.entraToken,
          expires_on: String(Math.floor(Date.now() / 1000) + 3600),
          token_type: 'Bearer',
        }),
      );
    }
    if (req.method === 'POST' && req.path === '/oauth2/exchange') {
      const f = new URLSearchParams(req.body);
      if (f.get('grant_type') !== 'access_token' || f.get('service') !== o.registry)
        return bad(400, 'invalid_request', 'grant_type and service');
      if (f.get('access_token') !== o.entraToken) return bad(401, 'unauthorized', 'invalid access token');
      return send(res, 200, JSON.stringify({ refresh_token: o.refreshToken }));
    }
    send(res, 404, '');
  });
}

/** An unsigned JWT with the given `exp`, shaped like an ACR refresh token. */
export function fakeRefreshToken(exp: number, id = 'r1'): string {
  const part = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ jti: id, exp, grant_type: 'refresh_token' })}.c2ln`;
}
