/**
 * Image references parsed and normalised the way Docker does (distribution/reference's
 * `ParseNormalizedNamed`): a first component with a `.` or `:`, `localhost`, or an uppercase
 * letter is a registry host; otherwise the image lives on Docker Hub, where single-component
 * names belong to `library/`.
 */
import { imageRepositoryProblem, isDigest } from '../../config/index.js';
import type { RepositoryRef } from './types.js';

export const DOCKER_HUB = 'docker.io';
/** Docker Hub's API host: `docker.io` itself serves no registry API. */
export const DOCKER_HUB_API = 'registry-1.docker.io';
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
const TAG = /^[\w][\w.-]{0,127}$/;

export class ImageReferenceError extends Error {
  override name = 'ImageReferenceError';
}

export interface ParseOptions {
  /** Plain HTTP (`spec.insecure`). localhost and loopback addresses use HTTP anyway, as Docker does. */
  insecure?: boolean;
}

/** True when requests to this host go over plain HTTP by default: localhost and loopback IPs. */
export function isLoopbackHost(hostPort: string): boolean {
  const host = hostPort.startsWith('[')
    ? hostPort.slice(1, hostPort.indexOf(']'))
    : hostPort.replace(/:\d+$/, '');
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
}

function splitDomain(name: string): { registry: string; path: string } {
  const i = name.indexOf('/');
  const first = i < 0 ? '' : name.slice(0, i);
  if (i < 0 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    return { registry: DOCKER_HUB, path: name };
  }
  return { registry: first, path: name.slice(i + 1) };
}

/** `spec.image` → a normalised repository reference; throws ImageReferenceError saying what to write. */
export function parseRepositoryRef(image: string, opts: ParseOptions = {}): RepositoryRef {
  const original = image;
  const trimmed = image.trim();
  if (trimmed === '')
    throw new ImageReferenceError('the image is empty; write it like "ghcr.io/org/app" or "nginx"');
  const problem = imageRepositoryProblem(trimmed);
  if (problem) throw new ImageReferenceError(problem);
  let { registry, path } = splitDomain(trimmed);
  if (DOCKER_HUB_ALIASES.has(registry.toLowerCase())) registry = DOCKER_HUB;
  if (registry === DOCKER_HUB && !path.includes('/')) path = `library/${path}`;
  const hostForRequests = registry === DOCKER_HUB ? DOCKER_HUB_API : registry;
  const scheme = opts.insecure || isLoopbackHost(registry) ? 'http' : 'https';
  return {
    original,
    registry,
    baseUrl: `${scheme}://${hostForRequests}`,
    path,
    canonical: `${registry}/${path}`,
  };
}

export interface ImageReference {
  repo: RepositoryRef;
  tag?: string;
  digest?: string;
}

/** `name[:tag][@digest]`, as written in a manifest's `image:` field. */
export function parseImageReference(ref: string, opts: ParseOptions = {}): ImageReference {
  const trimmed = ref.trim();
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(trimmed)) {
    throw new ImageReferenceError(
      `"${ref}" has a scheme; write the image without it, e.g. "${trimmed.replace(/^[^:]+:\/\//, '')}"`,
    );
  }
  let rest = trimmed;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!isDigest(digest))
      throw new ImageReferenceError(
        `"${ref}" has an invalid digest "${digest}"; expected e.g. "sha256:<64 hex digits>"`,
      );
  }
  let tag: string | undefined;
  const colon = rest.indexOf(':', rest.lastIndexOf('/') + 1);
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag))
      throw new ImageReferenceError(
        `"${ref}" has an invalid tag "${tag}" (letters, digits, "_", "." and "-", up to 128, not starting with "." or "-")`,
      );
  }
  const repo = parseRepositoryRef(rest, opts);
  return {
    repo: { ...repo, original: ref },
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** Docker's short form for messages: `nginx`, `org/app`, `ghcr.io/org/app`. */
export function familiarName(repo: RepositoryRef): string {
  if (repo.registry !== DOCKER_HUB) return repo.canonical;
  return repo.path.startsWith('library/') && repo.path.split('/').length === 2
    ? repo.path.slice('library/'.length)
    : repo.path;
}
