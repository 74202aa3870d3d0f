/**
 * Pushes images to a test registry with plain HTTP calls (OCI distribution: monolithic blob
 * upload POST+PUT, manifest PUT), fast enough for thousands of tags: blobs the registry already
 * has are skipped (remembered per repository), so tags with the same `created` share everything.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface PushAuth {
  username: string;
  password: string;
}

export interface PushOptions {
  /** Config `created` (omitted from the config when undefined). */
  created?: Date;
  /** Manifest annotations (for an index: the index's own). */
  annotations?: Record<string, string>;
  /** Config labels (`config.Labels`). */
  labels?: Record<string, string>;
  /** Push an OCI index with linux/amd64 and linux/arm64 children and an attestation child. */
  index?: boolean;
  /** Index only: the children's config `created` (amd64, arm64); default both `created`. */
  childCreated?: [Date | undefined, Date | undefined];
  /** Index only: the attestation child's config `created` (default 2099-01-01, so skipping it shows). */
  attestationCreated?: Date;
  /** Index only: omit the attestation child. */
  noAttestation?: boolean;
  auth?: PushAuth;
}

export interface PushedImage {
  /** Digest of the manifest (or index) the tag points to. */
  digest: string;
  mediaType: string;
  /** Image manifest: its config digest. Index: the children's manifest digests. */
  configDigest?: string;
  children?: { digest: string; platform: string }[];
}

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';

const LAYER = Buffer.from('pawl test layer — not a real tarball, the registry does not care\n');

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

const authCache = new Map<string, string>();
/** Uploads by registry|repo|digest, so concurrent pushes of the same blob share one upload. */
const knownBlobs = new Map<string, Promise<string>>();

function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const params: Record<string, string> = {};
  const re = /([a-zA-Z_]+)="([^"]*)"/g;
  for (let m = re.exec(header); m; m = re.exec(header)) params[m[1]!.toLowerCase()] = m[2]!;
  return { scheme, params };
}

async function authorize(challenge: string, repo: string, auth: PushAuth | undefined): Promise<string> {
  const { scheme, params } = parseChallenge(challenge);
  const basic = auth
    ? `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`
    : undefined;
  if (scheme === 'basic') {
    if (!basic) throw new Error('push: the registry wants Basic auth and no credentials were given');
    return basic;
  }
  const url = new URL(params.realm!);
  if (params.service) url.searchParams.set('service', params.service);
  url.searchParams.set('scope', `repository:${repo}:pull,push,delete`);
  const res = await fetch(url, { headers: basic ? { authorization: basic } : {} });
  const body = (await res.json()) as { token?: string; access_token?: string };
  if (!res.ok) throw new Error(`push: token server said ${res.status}`);
  return `Bearer ${body.token ?? body.access_token}`;
}

/** fetch with the registry's auth challenge answered (and cached per registry, repository and user). */
async function call(
  registryUrl: string,
  repo: string,
  auth: PushAuth | undefined,
  path: string,
  init: { method: string; headers?: Record<string, string>; body?: Buffer },
): Promise<Response> {
  const key = `${registryUrl}|${repo}|${auth?.username ?? ''}`;
  const target = path.startsWith('http') ? path : `${registryUrl}${path}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    const headers: Record<string, string> = { ...init.headers };
    const cached = authCache.get(key);
    if (cached) headers.authorization = cached;
    const res = await fetch(target, {
      method: init.method,
      headers,
      ...(init.body ? { body: init.body } : {}),
    });
    if (res.status !== 401 || attempt > 0) return res;
    await res.arrayBuffer();
    const challenge = res.headers.get('www-authenticate');
    if (!challenge) return res;
    authCache.set(key, await authorize(challenge, repo, auth));
  }
  throw new Error('unreachable');
}

async function expectOk(res: Response, what: string): Promise<void> {
  if (!res.ok) throw new Error(`push: ${what}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

export async function putBlob(
  registryUrl: string,
  repo: string,
  auth: PushAuth | undefined,
  data: Buffer,
): Promise<string> {
  const digest = sha256(data);
  const key = `${registryUrl}|${repo}|${digest}`;
  let pending = knownBlobs.get(key);
  if (!pending) {
    pending = uploadBlob(registryUrl, repo, auth, data, digest);
    knownBlobs.set(key, pending);
    pending.catch(() => knownBlobs.delete(key));
  }
  return pending;
}

async function uploadBlob(
  registryUrl: string,
  repo: string,
  auth: PushAuth | undefined,
  data: Buffer,
  digest: string,
): Promise<string> {
  // No HEAD first: re-uploading a blob the registry has is harmless, and one round trip fewer
  // matters when pushing thousands of distinct configs.
  const start = await call(registryUrl, repo, auth, `/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  await expectOk(start, `start upload to ${repo}`);
  const location = start.headers.get('location');
  if (!location) throw new Error('push: no Location on upload start');
  const put = new URL(location, registryUrl);
  put.searchParams.set('digest', digest);
  const res = await call(registryUrl, repo, auth, put.toString(), {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: data,
  });
  await expectOk(res, `upload blob ${digest}`);
  return digest;
}

export async function putManifest(
  registryUrl: string,
  repo: string,
  auth: PushAuth | undefined,
  reference: string,
  mediaType: string,
  manifest: unknown,
): Promise<{ digest: string; size: number }> {
  const body = Buffer.from(JSON.stringify(manifest));
  const res = await call(registryUrl, repo, auth, `/v2/${repo}/manifests/${reference}`, {
    method: 'PUT',
    headers: { 'content-type': mediaType },
    body,
  });
  await expectOk(res, `put manifest ${repo}:${reference}`);
  return { digest: sha256(body), size: body.length };
}

function configBlob(
  created: Date | undefined,
  labels: Record<string, string> | undefined,
  arch = 'amd64',
  os = 'linux',
): Buffer {
  const config: Record<string, unknown> = {
    architecture: arch,
    os,
    config: labels ? { Labels: labels } : {},
    rootfs: { type: 'layers', diff_ids: [sha256(LAYER)] },
  };
  if (created) config.created = created.toISOString();
  return Buffer.from(JSON.stringify(config));
}

async function imageManifest(
  registryUrl: string,
  repo: string,
  auth: PushAuth | undefined,
  config: Buffer,
  annotations: Record<string, string> | undefined,
  configMediaType = OCI_CONFIG,
): Promise<{ manifest: Record<string, unknown>; configDigest: string }> {
  const [configDigest, layerDigest] = await Promise.all([
    putBlob(registryUrl, repo, auth, config),
    putBlob(registryUrl, repo, auth, LAYER),
  ]);
  const manifest: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: configMediaType, digest: configDigest, size: config.length },
    layers: [{ mediaType: OCI_LAYER, digest: layerDigest, size: LAYER.length }],
  };
  if (annotations && Object.keys(annotations).length > 0) manifest.annotations = annotations;
  return { manifest, configDigest };
}

/** Push one image (or index) and tag it. */
export async function pushImage(
  registryUrl: string,
  repo: string,
  tag: string,
  opts: PushOptions = {},
): Promise<PushedImage> {
  const { auth } = opts;
  if (!opts.index) {
    const { manifest, configDigest } = await imageManifest(
      registryUrl,
      repo,
      auth,
      configBlob(opts.created, opts.labels),
      opts.annotations,
    );
    const { digest } = await putManifest(registryUrl, repo, auth, tag, OCI_MANIFEST, manifest);
    return { digest, mediaType: OCI_MANIFEST, configDigest };
  }
  const platforms: { arch: string; created: Date | undefined }[] = [
    { arch: 'amd64', created: opts.childCreated ? opts.childCreated[0] : opts.created },
    { arch: 'arm64', created: opts.childCreated ? opts.childCreated[1] : opts.created },
  ];
  const entries: Record<string, unknown>[] = [];
  const children: { digest: string; platform: string }[] = [];
  for (const p of platforms) {
    const { manifest } = await imageManifest(
      registryUrl,
      repo,
      auth,
      configBlob(p.created, opts.labels, p.arch),
      undefined,
    );
    const { digest, size } = await putManifest(
      registryUrl,
      repo,
      auth,
      sha256(Buffer.from(JSON.stringify(manifest))),
      OCI_MANIFEST,
      manifest,
    );
    entries.push({ mediaType: OCI_MANIFEST, digest, size, platform: { architecture: p.arch, os: 'linux' } });
    children.push({ digest, platform: `linux/${p.arch}` });
  }
  if (!opts.noAttestation) {
    const att = configBlob(
      opts.attestationCreated ?? new Date('2099-01-01T00:00:00Z'),
      undefined,
      'unknown',
      'unknown',
    );
    const { manifest } = await imageManifest(registryUrl, repo, auth, att, undefined);
    const { digest, size } = await putManifest(
      registryUrl,
      repo,
      auth,
      sha256(Buffer.from(JSON.stringify(manifest))),
      OCI_MANIFEST,
      manifest,
    );
    entries.push({
      mediaType: OCI_MANIFEST,
      digest,
      size,
      platform: { architecture: 'unknown', os: 'unknown' },
      annotations: {
        'vnd.docker.reference.type': 'attestation-manifest',
        'vnd.docker.reference.digest': entries[0]!.digest,
      },
    });
    children.push({ digest, platform: 'unknown/unknown' });
  }
  const index: Record<string, unknown> = { schemaVersion: 2, mediaType: OCI_INDEX, manifests: entries };
  if (opts.annotations && Object.keys(opts.annotations).length > 0) index.annotations = opts.annotations;
  const { digest } = await putManifest(registryUrl, repo, auth, tag, OCI_INDEX, index);
  return { digest, mediaType: OCI_INDEX, children };
}

/**
 * Push many tags quickly. With no `createdFor`, every tag points at one image (one manifest PUT
 * per tag); with it, each tag gets its own config (and so its own digest).
 */
export async function pushTags(
  registryUrl: string,
  repo: string,
  tags: string[],
  opts: {
    auth?: PushAuth;
    createdFor?: (tag: string, i: number) => Date | undefined;
    concurrency?: number;
  } = {},
): Promise<Map<string, PushedImage>> {
  const out = new Map<string, PushedImage>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tags.length) {
      const i = next++;
      const tag = tags[i]!;
      const created = opts.createdFor ? opts.createdFor(tag, i) : new Date('2024-01-01T00:00:00Z');
      out.set(
        tag,
        await pushImage(registryUrl, repo, tag, {
          ...(created ? { created } : {}),
          ...(opts.auth ? { auth: opts.auth } : {}),
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 32, tags.length) }, worker));
  return out;
}

/** DELETE a manifest by digest (removes every tag pointing at it). */
export async function deleteManifest(
  registryUrl: string,
  repo: string,
  digest: string,
  opts: { auth?: PushAuth } = {},
): Promise<void> {
  const res = await call(registryUrl, repo, opts.auth, `/v2/${repo}/manifests/${digest}`, {
    method: 'DELETE',
  });
  await expectOk(res, `delete ${repo}@${digest}`);
}

/**
 * Remove one tag. Registry 2.8 cannot delete a tag by name (DELETE by tag is unsupported), and
 * deleting the digest would remove every tag sharing it; so the tag is re-pointed at a unique
 * throwaway manifest, which is then deleted.
 */
export async function deleteTag(
  registryUrl: string,
  repo: string,
  tag: string,
  opts: { auth?: PushAuth } = {},
): Promise<void> {
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {},
      rootfs: { type: 'layers', diff_ids: [] },
      pawlDelete: `${tag}-${Date.now()}-${Math.random()}`,
    }),
  );
  const { manifest } = await imageManifest(registryUrl, repo, opts.auth, config, undefined);
  const { digest } = await putManifest(registryUrl, repo, opts.auth, tag, OCI_MANIFEST, manifest);
  await deleteManifest(registryUrl, repo, digest, opts);
}

/**
 * Point many tags at an already pushed manifest by writing the registry's own tag links into its
 * filesystem storage (distribution's layout: `_manifests/tags/<tag>/current/link` and
 * `.../index/sha256/<hex>/link`). The registry then lists and serves them like pushed tags;
 * thousands of tags take a fraction of a second instead of one PUT each.
 */
export async function seedTags(
  storageDir: string,
  repo: string,
  tags: string[],
  digest: string,
): Promise<void> {
  const hex = digest.replace(/^sha256:/, '');
  const base = join(storageDir, 'docker/registry/v2/repositories', repo, '_manifests/tags');
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tags.length) {
      const tag = tags[next++]!;
      await mkdir(join(base, tag, 'current'), { recursive: true });
      await writeFile(join(base, tag, 'current', 'link'), digest);
      await mkdir(join(base, tag, 'index', 'sha256', hex), { recursive: true });
      await writeFile(join(base, tag, 'index', 'sha256', hex, 'link'), digest);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}
