/**
 * Amazon ECR, the way Flux's `provider: aws` does it (fluxcd/pkg auth/aws): AWS credentials from
 * the SDK's default chain, then `ecr:GetAuthorizationToken` (SigV4-signed) in the registry's own
 * region, whose token is `base64(AWS:password)` for Basic auth at the registry, valid 12 hours.
 * `public.ecr.aws` uses ECR Public's token call in us-east-1.
 *
 * The chain, in the SDK's order: environment variables; the shared credentials and config files
 * (profile `AWS_PROFILE`, static keys, `role_arn` with `web_identity_token_file` or with
 * `source_profile`); `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN` (EKS IRSA) → STS
 * AssumeRoleWithWebIdentity; the ECS/EKS Pod Identity container endpoint; EC2 instance metadata
 * (IMDSv2).
 */
import { join } from 'node:path';
import { RuntimeError } from '../../../util/index.js';
import { ECR_HOST, PUBLIC_ECR, ecrRegion } from '../../../image/index.js';
import type { Credentials } from '../credentials.js';
import { form, json, readNamedFile, readOptionalFile, send, type CloudDeps } from './http.js';
import { signRequest, type AwsCredentials } from './sigv4.js';

export { ECR_HOST, PUBLIC_ECR, ecrRegion };

const dnsSuffix = (region: string): string =>
  region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';

// ---------------------------------------------------------------- shared files

type Ini = Map<string, Record<string, string>>;

/** The INI dialect of ~/.aws/credentials and ~/.aws/config: sections, `key = value`, `#`/`;` comments. */
export function parseIni(text: string): Ini {
  const out: Ini = new Map();
  let section: Record<string, string> | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (head) {
      section = out.get(head[1]!) ?? {};
      out.set(head[1]!, section);
      continue;
    }
    const kv = /^([^=]+?)\s*=\s*(.*)$/.exec(line);
    if (kv && section) section[kv[1]!.toLowerCase()] = kv[2]!;
  }
  return out;
}

interface Profiles {
  credentials: Ini;
  config: Ini;
  credentialsFile: string;
  configFile: string;
}

async function sharedFiles(deps: CloudDeps): Promise<Profiles> {
  const credentialsFile = deps.env.AWS_SHARED_CREDENTIALS_FILE ?? join(deps.homedir, '.aws', 'credentials');
  const configFile = deps.env.AWS_CONFIG_FILE ?? join(deps.homedir, '.aws', 'config');
  const [c, f] = await Promise.all([
    readOptionalFile(deps, credentialsFile),
    readOptionalFile(deps, configFile),
  ]);
  return { credentials: parseIni(c ?? ''), config: parseIni(f ?? ''), credentialsFile, configFile };
}

/** A profile's settings: the credentials file's `[name]` over the config file's `[profile name]`. */
function profile(p: Profiles, name: string): Record<string, string> | undefined {
  const fromConfig = p.config.get(name === 'default' ? 'default' : `profile ${name}`) ?? p.config.get(name);
  const fromCredentials = p.credentials.get(name);
  if (!fromConfig && !fromCredentials) return undefined;
  return { ...fromConfig, ...fromCredentials };
}

// ---------------------------------------------------------------- STS

function stsEndpoint(deps: CloudDeps, region: string): string {
  return (
    deps.env.AWS_ENDPOINT_URL_STS ??
    deps.endpoints.awsSts?.(region) ??
    `https://sts.${region}.${dnsSuffix(region)}`
  );
}

/** The text of `<tag>…</tag>` in an STS XML answer (values are plain text, XML-escaped). */
function xmlText(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m?.[1]
    ?.replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&apos;', "'")
    .replaceAll('&amp;', '&');
}

function stsCredentials(what: string, status: number, xml: string, source: string): AwsCredentials {
  if (status !== 200) {
    const code = xmlText(xml, 'Code');
    const message = xmlText(xml, 'Message');
    throw new RuntimeError(
      `${what}: HTTP ${status}${code ? ` ${code}` : ''}${message ? `: ${message.slice(0, 300)}` : ''}`,
    );
  }
  const accessKeyId = xmlText(xml, 'AccessKeyId');
  const secretAccessKey = xmlText(xml, 'SecretAccessKey');
  const sessionToken = xmlText(xml, 'SessionToken');
  const expiration = xmlText(xml, 'Expiration');
  if (!accessKeyId || !secretAccessKey) throw new RuntimeError(`${what}: the answer has no Credentials`);
  return {
    accessKeyId,
    secretAccessKey,
    ...(sessionToken ? { sessionToken } : {}),
    ...(expiration ? { expiresAt: Date.parse(expiration) } : {}),
    source,
  };
}

/**
 * A role and its web identity token file, in a profile's own keys: the environment's
 * AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_SESSION_NAME are the same three.
 */
interface WebIdentity {
  role_arn?: string | undefined;
  web_identity_token_file?: string | undefined;
  role_session_name?: string | undefined;
}

/** Credentials for `w`'s role when it names one and a token file; undefined when it does not. */
function webIdentityCredentials(
  deps: CloudDeps,
  region: string,
  w: WebIdentity,
  namedBy: string,
): Promise<AwsCredentials> | undefined {
  if (!w.role_arn || !w.web_identity_token_file) return undefined;
  return assumeRoleWithWebIdentity(
    deps,
    region,
    w.role_arn,
    w.web_identity_token_file,
    namedBy,
    w.role_session_name,
  );
}

async function assumeRoleWithWebIdentity(
  deps: CloudDeps,
  region: string,
  roleArn: string,
  tokenFile: string,
  namedBy: string,
  sessionName: string | undefined,
): Promise<AwsCredentials> {
  const token = (await readNamedFile(deps, tokenFile, namedBy)).trim();
  const url = stsEndpoint(deps, region);
  const what = `STS AssumeRoleWithWebIdentity for ${roleArn} at ${new URL(url).origin}`;
  const a = await send(deps, what, url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: form({
      Action: 'AssumeRoleWithWebIdentity',
      Version: '2011-06-15',
      RoleArn: roleArn,
      RoleSessionName: sessionName ?? `pawl-${deps.now()}`,
      WebIdentityToken: token,
    }),
  });
  return stsCredentials(what, a.status, a.text, `web identity token ${tokenFile} (${namedBy}) → ${roleArn}`);
}

async function assumeRole(
  deps: CloudDeps,
  region: string,
  roleArn: string,
  base: AwsCredentials,
  sessionName: string | undefined,
  source: string,
): Promise<AwsCredentials> {
  const url = new URL(stsEndpoint(deps, region));
  const what = `STS AssumeRole for ${roleArn} at ${url.origin}`;
  const body = form({
    Action: 'AssumeRole',
    Version: '2011-06-15',
    RoleArn: roleArn,
    RoleSessionName: sessionName ?? `pawl-${deps.now()}`,
  });
  const headers = signRequest(
    {
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body,
      region,
      service: 'sts',
      now: new Date(deps.now()),
    },
    base,
  );
  const a = await send(deps, what, url.toString(), { method: 'POST', headers, body });
  return stsCredentials(what, a.status, a.text, source);
}

// ---------------------------------------------------------------- container and instance metadata

function metadataCredentials(what: string, body: Record<string, unknown>, source: string): AwsCredentials {
  const { AccessKeyId, SecretAccessKey, Token, Expiration } = body;
  if (typeof AccessKeyId !== 'string' || typeof SecretAccessKey !== 'string')
    throw new RuntimeError(`${what}: the answer has no AccessKeyId/SecretAccessKey`);
  return {
    accessKeyId: AccessKeyId,
    secretAccessKey: SecretAccessKey,
    ...(typeof Token === 'string' && Token ? { sessionToken: Token } : {}),
    ...(typeof Expiration === 'string' ? { expiresAt: Date.parse(Expiration) } : {}),
    source,
  };
}

async function containerCredentials(deps: CloudDeps): Promise<AwsCredentials | undefined> {
  const relative = deps.env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI;
  const full = deps.env.AWS_CONTAINER_CREDENTIALS_FULL_URI;
  if (!relative && !full) return undefined;
  const url = relative ? `${deps.endpoints.awsEcsHost ?? 'http://169.254.170.2'}${relative}` : full!;
  const headers: Record<string, string> = { accept: 'application/json' };
  const tokenFile = deps.env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE;
  if (tokenFile) {
    headers.authorization = (
      await readNamedFile(deps, tokenFile, 'AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE')
    ).trim();
  } else if (deps.env.AWS_CONTAINER_AUTHORIZATION_TOKEN) {
    headers.authorization = deps.env.AWS_CONTAINER_AUTHORIZATION_TOKEN;
  }
  const what = `the container credentials endpoint ${new URL(url).origin} (${relative ? 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI' : 'AWS_CONTAINER_CREDENTIALS_FULL_URI'})`;
  const a = await send(deps, what, url, { method: 'GET', headers });
  if (a.status !== 200) throw new RuntimeError(`${what}: HTTP ${a.status}`);
  return metadataCredentials(what, json(what, a), 'the ECS/EKS container credentials endpoint');
}

async function instanceCredentials(deps: CloudDeps): Promise<AwsCredentials | undefined> {
  if ((deps.env.AWS_EC2_METADATA_DISABLED ?? '').toLowerCase() === 'true') return undefined;
  const base = (
    deps.env.AWS_EC2_METADATA_SERVICE_ENDPOINT ??
    deps.endpoints.awsImds ??
    'http://169.254.169.254'
  ).replace(/\/$/, '');
  const what = `EC2 instance metadata at ${base}`;
  let token: string;
  try {
    const t = await send(deps, what, `${base}/latest/api/token`, {
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '21600' },
    });
    if (t.status !== 200) return undefined;
    token = t.text.trim();
  } catch {
    // Not on EC2 (or metadata blocked): the chain ends here without credentials.
    return undefined;
  }
  const headers = { 'x-aws-ec2-metadata-token': token };
  const path = `${base}/latest/meta-data/iam/security-credentials/`;
  const roles = await send(deps, what, path, { method: 'GET', headers });
  const role = roles.text.split('\n')[0]?.trim();
  if (roles.status !== 200 || !role)
    throw new RuntimeError(`${what}: the instance has no IAM role (HTTP ${roles.status})`);
  const a = await send(deps, what, `${path}${encodeURIComponent(role)}`, { method: 'GET', headers });
  if (a.status !== 200) throw new RuntimeError(`${what}: HTTP ${a.status} for the role's credentials`);
  return metadataCredentials(what, json(what, a), `EC2 instance role ${role}`);
}

// ---------------------------------------------------------------- the chain

/** AWS credentials from the default chain; `region` is where STS is asked (the registry's). */
export async function awsCredentials(deps: CloudDeps, region: string): Promise<AwsCredentials> {
  const env = deps.env;
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
    return {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
      source: 'environment variables AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY',
    };
  }

  const files = await sharedFiles(deps);
  const explicit = env.AWS_PROFILE ?? env.AWS_DEFAULT_PROFILE;
  const name = explicit ?? 'default';
  const fromProfile = await profileCredentials(deps, files, name, region, 0);
  if (fromProfile) return fromProfile;
  if (explicit) {
    throw new RuntimeError(
      `AWS profile "${name}" (AWS_PROFILE) is in neither ${files.credentialsFile} nor ${files.configFile}`,
    );
  }

  const fromEnv = webIdentityCredentials(
    deps,
    region,
    {
      role_arn: env.AWS_ROLE_ARN,
      web_identity_token_file: env.AWS_WEB_IDENTITY_TOKEN_FILE,
      role_session_name: env.AWS_ROLE_SESSION_NAME,
    },
    'AWS_WEB_IDENTITY_TOKEN_FILE',
  );
  if (fromEnv) return fromEnv;
  const container = await containerCredentials(deps);
  if (container) return container;
  const instance = await instanceCredentials(deps);
  if (instance) return instance;
  throw new RuntimeError(
    `no AWS credentials found; pawl looked at AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile "${name}" in ${files.credentialsFile} and ${files.configFile}, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, the ECS/EKS container endpoint and EC2 instance metadata`,
  );
}

async function profileCredentials(
  deps: CloudDeps,
  files: Profiles,
  name: string,
  region: string,
  depth: number,
): Promise<AwsCredentials | undefined> {
  const p = profile(files, name);
  if (!p) return undefined;
  const where = `AWS profile "${name}"`;
  const web = webIdentityCredentials(deps, region, p, `${where} web_identity_token_file`);
  if (web) return web;
  if (p.role_arn && p.source_profile) {
    if (depth > 3) throw new RuntimeError(`${where}: source_profile chain is too long (a loop?)`);
    const base = await profileCredentials(deps, files, p.source_profile, region, depth + 1);
    if (!base) throw new RuntimeError(`${where}: source_profile "${p.source_profile}" does not exist`);
    return assumeRole(
      deps,
      region,
      p.role_arn,
      base,
      p.role_session_name,
      `${where} (role ${p.role_arn} from profile "${p.source_profile}")`,
    );
  }
  if (p.aws_access_key_id && p.aws_secret_access_key) {
    return {
      accessKeyId: p.aws_access_key_id,
      secretAccessKey: p.aws_secret_access_key,
      ...(p.aws_session_token ? { sessionToken: p.aws_session_token } : {}),
      source: where,
    };
  }
  const unsupported = ['credential_process', 'sso_session', 'sso_start_url', 'credential_source'].find(
    (k) => p[k],
  );
  if (unsupported) {
    throw new RuntimeError(
      `${where} uses ${unsupported}, which pawl does not support; use static keys, web_identity_token_file or source_profile`,
    );
  }
  return undefined;
}

// ---------------------------------------------------------------- ECR

/** Registry credentials for an ECR (or ECR Public) host: `AWS` and the token's password, with its expiry. */
export async function ecrCredentials(deps: CloudDeps, host: string): Promise<Credentials> {
  const region = ecrRegion(host);
  if (!region) throw new RuntimeError(`${host} is not an Amazon ECR registry (provider aws)`);
  const isPublic = host === PUBLIC_ECR;
  const aws = await awsCredentials(deps, region);
  const base = isPublic
    ? (deps.env.AWS_ENDPOINT_URL_ECR_PUBLIC ??
      deps.endpoints.awsEcrPublic ??
      'https://api.ecr-public.us-east-1.amazonaws.com')
    : (deps.env.AWS_ENDPOINT_URL_ECR ??
      deps.endpoints.awsEcr?.(region) ??
      `https://api.ecr.${region}.${dnsSuffix(region)}`);
  const url = new URL('/', base);
  const what = `ECR${isPublic ? ' Public' : ''} GetAuthorizationToken at ${url.origin}`;
  const body = '{}';
  const headers = signRequest(
    {
      method: 'POST',
      url,
      headers: {
        'content-type': 'application/x-amz-json-1.1',
        'x-amz-target': isPublic
          ? 'SpencerFrontendService.GetAuthorizationToken'
          : 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken',
      },
      body,
      region,
      service: isPublic ? 'ecr-public' : 'ecr',
      now: new Date(deps.now()),
    },
    aws,
  );
  const a = await send(deps, what, url.toString(), { method: 'POST', headers, body });
  const answer = json(what, a);
  if (a.status !== 200) {
    const type = typeof answer.__type === 'string' ? answer.__type.replace(/^.*#/, '') : '';
    const message =
      typeof answer.message === 'string'
        ? answer.message
        : typeof answer.Message === 'string'
          ? answer.Message
          : '';
    throw new RuntimeError(
      `${what} with the credentials from ${aws.source}: HTTP ${a.status} ${type}${message ? `: ${message.slice(0, 300)}` : ''}`,
    );
  }
  const data = isPublic
    ? (answer.authorizationData as Record<string, unknown> | undefined)
    : (answer.authorizationData as Record<string, unknown>[] | undefined)?.[0];
  const token = data?.authorizationToken;
  if (typeof token !== 'string') throw new RuntimeError(`${what}: the answer has no authorizationToken`);
  const decoded = Buffer.from(token, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw new RuntimeError(`${what}: the authorization token is not base64 of USER:PASSWORD`);
  const expiresAt = typeof data?.expiresAt === 'number' ? data.expiresAt * 1000 : undefined;
  return {
    username: decoded.slice(0, colon),
    password: decoded.slice(colon + 1),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    source: `provider aws (ECR token for ${aws.source})`,
  };
}
