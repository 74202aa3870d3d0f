/**
 * What the cloud credential code needs from the outside world, injected so that every token
 * exchange can run against a stand-in on 127.0.0.1: HTTP, the environment, files, the clock.
 * Errors name the provider, the step and the endpoint's origin; never a token, key or body
 * beyond the service's own error code and message.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { RuntimeError } from '../../../util/index.js';

export interface CloudDeps {
  fetch: typeof fetch;
  env: Readonly<Record<string, string | undefined>>;
  readFile(path: string): Promise<string>;
  homedir: string;
  /** ms since the epoch. */
  now(): number;
  /** Per request (default 10s): metadata endpoints that are not there must not hold a scan up. */
  timeoutMs: number;
  /**
   * Endpoints that have no environment override in the cloud SDKs (each SDK's own overrides,
   * e.g. AWS_ENDPOINT_URL_ECR, GCE_METADATA_HOST, AZURE_AUTHORITY_HOST, are honoured too).
   */
  endpoints: CloudEndpoints;
}

export interface CloudEndpoints {
  /** ECS task credentials host for AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (default http://169.254.170.2). */
  awsEcsHost?: string;
  /** EC2 instance metadata (default http://169.254.169.254; env AWS_EC2_METADATA_SERVICE_ENDPOINT). */
  awsImds?: string;
  /** STS for a region (default https://sts.REGION.amazonaws.com; env AWS_ENDPOINT_URL_STS). */
  awsSts?: (region: string) => string;
  /** ECR API for a region (default https://api.ecr.REGION.amazonaws.com; env AWS_ENDPOINT_URL_ECR). */
  awsEcr?: (region: string) => string;
  /** ECR Public API (default https://api.ecr-public.us-east-1.amazonaws.com; env AWS_ENDPOINT_URL_ECR_PUBLIC). */
  awsEcrPublic?: string;
  /** GCE metadata server (default http://metadata.google.internal; env GCE_METADATA_HOST). */
  gcpMetadata?: string;
  /** Azure instance metadata for managed identity (default http://169.254.169.254). */
  azureImds?: string;
}

export function defaultCloudDeps(overrides: Partial<CloudDeps> = {}): CloudDeps {
  return {
    fetch: (...args) => fetch(...args),
    env: process.env,
    readFile: (p) => readFile(p, 'utf8'),
    homedir: homedir(),
    now: () => Date.now(),
    timeoutMs: 10_000,
    endpoints: {},
    ...overrides,
  };
}

export interface Answer {
  status: number;
  text: string;
}

/** One request; a network failure becomes a RuntimeError naming `what` and the origin. */
export async function send(
  deps: CloudDeps,
  what: string,
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<Answer> {
  let res: Response;
  try {
    res = await deps.fetch(url, {
      method: init.method,
      headers: init.headers ?? {},
      ...(init.body !== undefined ? { body: init.body } : {}),
      redirect: 'error',
      signal: AbortSignal.timeout(deps.timeoutMs),
    });
  } catch (err) {
    const cause =
      err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
    throw new RuntimeError(`${what}: cannot reach ${new URL(url).origin} (${cause})`);
  }
  return { status: res.status, text: await res.text() };
}

/** `application/x-www-form-urlencoded` body. */
export function form(fields: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) p.set(k, v);
  return p.toString();
}

/** Parsed JSON, or a RuntimeError saying `what` answered something else. */
export function json(what: string, a: Answer): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(a.text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // handled below
  }
  throw new RuntimeError(`${what}: the answer is not a JSON object (HTTP ${a.status})`);
}

/** An OAuth2 error answer as `invalid_client: AADSTS7000215 …`, without anything else from the body. */
export function oauthError(a: Answer): string {
  try {
    const v = JSON.parse(a.text) as { error?: unknown; error_description?: unknown };
    const parts = [v.error, v.error_description].filter((x): x is string => typeof x === 'string');
    if (parts.length) return `HTTP ${a.status}: ${parts.join(': ').split('\n')[0]!.slice(0, 300)}`;
  } catch {
    // not JSON
  }
  return `HTTP ${a.status}`;
}

/** A file the user pointed at; a RuntimeError naming the variable that named it when unreadable. */
export async function readNamedFile(deps: CloudDeps, path: string, namedBy: string): Promise<string> {
  try {
    return await deps.readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new RuntimeError(`cannot read ${path} (named by ${namedBy}): ${code}`);
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readOptionalFile(deps: CloudDeps, path: string): Promise<string | undefined> {
  try {
    return await deps.readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new RuntimeError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** The `exp` claim of a JWT, in ms, without verifying it (it is only used to know when to refresh). */
export function jwtExpiry(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
