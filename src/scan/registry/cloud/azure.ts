/**
 * Azure Container Registry, the way Flux's `provider: azure` does it (fluxcd/pkg auth/azure):
 * an Entra ID access token for the ACR scope from the default credential chain (without shell-
 * outs), exchanged at the registry's `/oauth2/exchange` for an ACR refresh token, which is the
 * password of the user `00000000-0000-0000-0000-000000000000`; it expires with its `exp`.
 *
 * The chain, in azidentity's order: a service principal from the environment
 * (`AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`); workload identity
 * (`AZURE_FEDERATED_TOKEN_FILE` with `AZURE_CLIENT_ID`, `AZURE_TENANT_ID`: the federated token is the
 * client assertion); managed identity through the instance metadata service.
 */
import { RuntimeError } from '../../../util/index.js';
import { AZURE_HOST } from '../../../image/index.js';
import type { Credentials } from '../credentials.js';
import { form, json, jwtExpiry, oauthError, readNamedFile, send, type CloudDeps } from './http.js';
import type { AccessToken } from './gcp.js';

/** fluxcd/pkg auth/azure registryPattern. */

/** The username ACR expects with a refresh token as the password. */
export const ACR_TOKEN_USER = '00000000-0000-0000-0000-000000000000';

/** Entra authority and ACR scope of the registry's cloud. */
export function azureCloud(host: string): { authority: string; scope: string } {
  if (host.endsWith('.azurecr.cn'))
    return {
      authority: 'https://login.chinacloudapi.cn/',
      scope: 'https://containerregistry.azure.cn/.default',
    };
  if (host.endsWith('.azurecr.us'))
    return {
      authority: 'https://login.microsoftonline.us/',
      scope: 'https://containerregistry.azure.us/.default',
    };
  return {
    authority: 'https://login.microsoftonline.com/',
    scope: 'https://containerregistry.azure.net/.default',
  };
}

async function entraToken(
  deps: CloudDeps,
  host: string,
  tenant: string,
  fields: Record<string, string>,
  source: string,
): Promise<AccessToken> {
  const { authority, scope } = azureCloud(host);
  const base = (deps.env.AZURE_AUTHORITY_HOST ?? authority).replace(/\/?$/, '/');
  const url = `${base}${encodeURIComponent(tenant)}/oauth2/v2.0/token`;
  const what = `Entra ID token endpoint ${new URL(url).origin} (tenant ${tenant})`;
  const a = await send(deps, what, url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ ...fields, scope, grant_type: 'client_credentials' }),
  });
  if (a.status !== 200) throw new RuntimeError(`${what} refused ${source}: ${oauthError(a)}`);
  const body = json(what, a);
  if (typeof body.access_token !== 'string')
    throw new RuntimeError(`${what}: the answer has no access_token`);
  const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : undefined;
  return {
    token: body.access_token,
    ...(expiresIn !== undefined ? { expiresAt: deps.now() + expiresIn * 1000 } : {}),
    source,
  };
}

async function managedIdentity(deps: CloudDeps, host: string): Promise<AccessToken> {
  const base = (deps.endpoints.azureImds ?? 'http://169.254.169.254').replace(/\/$/, '');
  const resource = azureCloud(host).scope.replace(/\/\.default$/, '');
  const url = new URL(`${base}/metadata/identity/oauth2/token`);
  url.searchParams.set('api-version', '2018-02-01');
  url.searchParams.set('resource', resource);
  if (deps.env.AZURE_CLIENT_ID) url.searchParams.set('client_id', deps.env.AZURE_CLIENT_ID);
  const what = `Azure instance metadata (managed identity) at ${base}`;
  const a = await send(deps, what, url.toString(), { method: 'GET', headers: { metadata: 'true' } });
  if (a.status !== 200) throw new RuntimeError(`${what}: ${oauthError(a)}`);
  const body = json(what, a);
  if (typeof body.access_token !== 'string')
    throw new RuntimeError(`${what}: the answer has no access_token`);
  const expiresOn = Number(body.expires_on);
  return {
    token: body.access_token,
    ...(Number.isFinite(expiresOn) && expiresOn > 0 ? { expiresAt: expiresOn * 1000 } : {}),
    source: 'managed identity',
  };
}

/** An Entra access token for the registry's ACR scope, from the default chain. */
export async function azureAccessToken(deps: CloudDeps, host: string): Promise<AccessToken> {
  const env = deps.env;
  if (env.AZURE_TENANT_ID && env.AZURE_CLIENT_ID && env.AZURE_CLIENT_SECRET) {
    return entraToken(
      deps,
      host,
      env.AZURE_TENANT_ID,
      { client_id: env.AZURE_CLIENT_ID, client_secret: env.AZURE_CLIENT_SECRET },
      `service principal ${env.AZURE_CLIENT_ID} (AZURE_CLIENT_SECRET)`,
    );
  }
  if (env.AZURE_TENANT_ID && env.AZURE_CLIENT_ID && env.AZURE_CLIENT_CERTIFICATE_PATH) {
    throw new RuntimeError(
      'AZURE_CLIENT_CERTIFICATE_PATH (certificate service principal) is not supported by pawl; use AZURE_CLIENT_SECRET or workload identity',
    );
  }
  if (env.AZURE_FEDERATED_TOKEN_FILE && env.AZURE_CLIENT_ID && env.AZURE_TENANT_ID) {
    const assertion = (
      await readNamedFile(deps, env.AZURE_FEDERATED_TOKEN_FILE, 'AZURE_FEDERATED_TOKEN_FILE')
    ).trim();
    return entraToken(
      deps,
      host,
      env.AZURE_TENANT_ID,
      {
        client_id: env.AZURE_CLIENT_ID,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      },
      `workload identity ${env.AZURE_CLIENT_ID} (AZURE_FEDERATED_TOKEN_FILE)`,
    );
  }
  try {
    return await managedIdentity(deps, host);
  } catch (err) {
    throw new RuntimeError(
      `no Azure credentials found: neither AZURE_TENANT_ID/AZURE_CLIENT_ID/AZURE_CLIENT_SECRET nor AZURE_FEDERATED_TOKEN_FILE/AZURE_CLIENT_ID/AZURE_TENANT_ID are set, and managed identity failed (${(err as Error).message})`,
    );
  }
}

/**
 * Registry credentials for ACR. `origin` is where the registry is reached (`https://HOST`, or
 * `http://…` with `insecure`): the exchange is the registry's own endpoint.
 */
export async function acrCredentials(deps: CloudDeps, host: string, origin: string): Promise<Credentials> {
  if (!AZURE_HOST.test(host))
    throw new RuntimeError(`${host} is not an Azure Container Registry (provider azure)`);
  const aad = await azureAccessToken(deps, host);
  const url = `${origin}/oauth2/exchange`;
  const what = `ACR token exchange at ${origin}`;
  const a = await send(deps, what, url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form({
      grant_type: 'access_token',
      service: host,
      access_token: aad.token,
      ...(deps.env.AZURE_TENANT_ID ? { tenant: deps.env.AZURE_TENANT_ID } : {}),
    }),
  });
  if (a.status !== 200)
    throw new RuntimeError(`${what} refused the Entra token of ${aad.source}: ${oauthError(a)}`);
  const body = json(what, a);
  if (typeof body.refresh_token !== 'string')
    throw new RuntimeError(`${what}: the answer has no refresh_token`);
  const expiresAt = jwtExpiry(body.refresh_token);
  return {
    username: ACR_TOKEN_USER,
    password: body.refresh_token,
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    source: `provider azure (${aad.source})`,
  };
}
