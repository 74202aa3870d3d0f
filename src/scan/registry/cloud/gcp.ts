/**
 * Google Container Registry and Artifact Registry, the way Flux's `provider: gcp` does it
 * (fluxcd/pkg auth/gcp): an OAuth2 access token from Application Default Credentials, sent as
 * the password of the user `oauth2accesstoken`.
 *
 * Application Default Credentials, in Google's order: the JSON file named by
 * `GOOGLE_APPLICATION_CREDENTIALS`; gcloud's `application_default_credentials.json`; the GCE/GKE
 * metadata server (Workload Identity on GKE). A file may hold a service account key (signed
 * JWT → token endpoint) or gcloud's `authorized_user` (refresh token → token endpoint).
 */
import { sign } from 'node:crypto';
import { GCP_HOST } from '../../../image/index.js';
import { join } from 'node:path';
import { RuntimeError } from '../../../util/index.js';
import type { Credentials } from '../credentials.js';
import { form, json, oauthError, readNamedFile, readOptionalFile, send, type CloudDeps } from './http.js';

/** fluxcd/pkg auth/gcp registryPattern. */

/** Flux's scopes for the controller token. */
export const GCP_SCOPES = [
  'https://www.googleapis.com/auth/cloud-platform',
  'https://www.googleapis.com/auth/userinfo.email',
];

const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

export interface AccessToken {
  token: string;
  expiresAt?: number;
  source: string;
}

function tokenFrom(what: string, body: Record<string, unknown>, now: number, source: string): AccessToken {
  const token = body.access_token;
  if (typeof token !== 'string' || !token) throw new RuntimeError(`${what}: the answer has no access_token`);
  const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : undefined;
  return { token, ...(expiresIn !== undefined ? { expiresAt: now + expiresIn * 1000 } : {}), source };
}

async function tokenRequest(
  deps: CloudDeps,
  what: string,
  url: string,
  body: string,
  source: string,
): Promise<AccessToken> {
  const a = await send(deps, what, url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  if (a.status !== 200) throw new RuntimeError(`${what}: ${oauthError(a)}`);
  return tokenFrom(what, json(what, a), deps.now(), source);
}

const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A credentials file: service_account (JWT bearer grant) or authorized_user (refresh grant). */
async function fromFile(deps: CloudDeps, file: string, text: string, namedBy: string): Promise<AccessToken> {
  let key: Record<string, unknown>;
  try {
    key = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new RuntimeError(`${file} (${namedBy}) is not JSON`);
  }
  const source = `${key.type === 'service_account' ? `service account ${String(key.client_email)}` : String(key.type)} from ${file} (${namedBy})`;
  if (key.type === 'service_account') {
    const { client_email: email, private_key: pem, private_key_id: kid } = key;
    if (typeof email !== 'string' || typeof pem !== 'string')
      throw new RuntimeError(
        `${file} (${namedBy}): a service_account key needs client_email and private_key`,
      );
    const tokenUri = typeof key.token_uri === 'string' ? key.token_uri : GOOGLE_TOKEN_URI;
    const iat = Math.floor(deps.now() / 1000);
    const header = b64url({ alg: 'RS256', typ: 'JWT', ...(typeof kid === 'string' ? { kid } : {}) });
    const claims = b64url({ iss: email, scope: GCP_SCOPES.join(' '), aud: tokenUri, iat, exp: iat + 3600 });
    let signature: string;
    try {
      signature = sign('RSA-SHA256', Buffer.from(`${header}.${claims}`), pem).toString('base64url');
    } catch {
      throw new RuntimeError(`${file} (${namedBy}): private_key is not a usable RSA private key`);
    }
    return tokenRequest(
      deps,
      `Google token endpoint ${new URL(tokenUri).origin} (JWT grant for ${email})`,
      tokenUri,
      form({
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion: `${header}.${claims}.${signature}`,
      }),
      source,
    );
  }
  if (key.type === 'authorized_user') {
    const { client_id, client_secret, refresh_token } = key;
    if (
      typeof client_id !== 'string' ||
      typeof client_secret !== 'string' ||
      typeof refresh_token !== 'string'
    )
      throw new RuntimeError(
        `${file} (${namedBy}): authorized_user needs client_id, client_secret and refresh_token`,
      );
    const tokenUri = typeof key.token_uri === 'string' ? key.token_uri : GOOGLE_TOKEN_URI;
    return tokenRequest(
      deps,
      `Google token endpoint ${new URL(tokenUri).origin} (refresh token)`,
      tokenUri,
      form({ grant_type: 'refresh_token', client_id, client_secret, refresh_token }),
      source,
    );
  }
  throw new RuntimeError(
    `${file} (${namedBy}) is of type ${JSON.stringify(key.type)}; pawl reads service_account and authorized_user credentials (not external_account or impersonation)`,
  );
}

async function fromMetadata(deps: CloudDeps): Promise<AccessToken> {
  const host = deps.env.GCE_METADATA_HOST ?? deps.endpoints.gcpMetadata ?? 'metadata.google.internal';
  const base = /^https?:\/\//.test(host) ? host.replace(/\/$/, '') : `http://${host}`;
  const url = `${base}/computeMetadata/v1/instance/service-accounts/default/token?scopes=${encodeURIComponent(GCP_SCOPES.join(','))}`;
  const what = `the GCE metadata server ${base}`;
  const a = await send(deps, what, url, { method: 'GET', headers: { 'metadata-flavor': 'Google' } });
  if (a.status !== 200) throw new RuntimeError(`${what}: HTTP ${a.status}`);
  return tokenFrom(what, json(what, a), deps.now(), 'the GCE/GKE metadata server (default service account)');
}

/** An access token from Application Default Credentials. */
export async function gcpAccessToken(deps: CloudDeps): Promise<AccessToken> {
  const named = deps.env.GOOGLE_APPLICATION_CREDENTIALS;
  if (named)
    return fromFile(
      deps,
      named,
      await readNamedFile(deps, named, 'GOOGLE_APPLICATION_CREDENTIALS'),
      'GOOGLE_APPLICATION_CREDENTIALS',
    );
  const gcloudDir = deps.env.CLOUDSDK_CONFIG ?? join(deps.homedir, '.config', 'gcloud');
  const wellKnown = join(gcloudDir, 'application_default_credentials.json');
  const text = await readOptionalFile(deps, wellKnown);
  if (text !== undefined) return fromFile(deps, wellKnown, text, 'gcloud auth application-default login');
  try {
    return await fromMetadata(deps);
  } catch (err) {
    throw new RuntimeError(
      `no Google credentials found: GOOGLE_APPLICATION_CREDENTIALS is not set, there is no ${wellKnown}, and the metadata server did not answer (${(err as Error).message})`,
    );
  }
}

/** Registry credentials for GCR / Artifact Registry. */
export async function gcpRegistryCredentials(deps: CloudDeps, host: string): Promise<Credentials> {
  if (!GCP_HOST.test(host)) throw new RuntimeError(`${host} is not a Google registry (provider gcp)`);
  const t = await gcpAccessToken(deps);
  return {
    username: 'oauth2accesstoken',
    password: t.token,
    ...(t.expiresAt !== undefined ? { expiresAt: t.expiresAt } : {}),
    source: `provider gcp (${t.source})`,
  };
}
