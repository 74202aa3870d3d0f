/**
 * Where the registry client sends requests for an image: the name is parsed and normalised by
 * src/image/ (Docker's rules); this adds the base URL (Docker Hub's API host, plain HTTP for
 * loopback registries and `spec.insecure`).
 */
import {
  DOCKER_HUB,
  DOCKER_HUB_API,
  familiarName as familiar,
  ImageReferenceError,
  isLoopbackHost,
  parseReference,
  parseRepository,
  type ImageName,
} from '../../image/index.js';
import type { RepositoryRef } from './types.js';

export { DOCKER_HUB, DOCKER_HUB_API, ImageReferenceError, isLoopbackHost };

export interface ParseOptions {
  /** Plain HTTP (`spec.insecure`). localhost and loopback addresses use HTTP anyway, as Docker does. */
  insecure?: boolean;
}

function repositoryRef(original: string, name: ImageName, opts: ParseOptions): RepositoryRef {
  const hostForRequests = name.domain === DOCKER_HUB ? DOCKER_HUB_API : name.domain;
  const scheme = opts.insecure || isLoopbackHost(name.domain) ? 'http' : 'https';
  return {
    original,
    registry: name.domain,
    baseUrl: `${scheme}://${hostForRequests}`,
    path: name.path,
    canonical: name.name,
  };
}

/** `spec.image` → a normalised repository reference; throws ImageReferenceError saying what to write. */
export function parseRepositoryRef(image: string, opts: ParseOptions = {}): RepositoryRef {
  return repositoryRef(image, parseRepository(image), opts);
}

export interface RegistryImage {
  repo: RepositoryRef;
  tag?: string;
  digest?: string;
}

/** `name[:tag][@digest]`, as written in a manifest's `image:` field. */
export function parseImageReference(ref: string, opts: ParseOptions = {}): RegistryImage {
  const { tag, digest, ...name } = parseReference(ref);
  return {
    repo: repositoryRef(ref, name, opts),
    ...(tag !== undefined ? { tag } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
}

/** Docker's short form for messages: `nginx`, `org/app`, `ghcr.io/org/app`. */
export function familiarName(repo: RepositoryRef): string {
  return familiar({ domain: repo.registry, path: repo.path });
}
