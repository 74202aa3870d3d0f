/**
 * Does an image a registry event names belong to an ImageRepository? Both sides are normalised
 * as Docker does (src/scan/registry/reference.ts): Docker Hub's aliases are one registry and its
 * one-component names live under `library/`; hosts compare case-insensitively; loopback names
 * (`localhost`, `127.0.0.1`, `::1`) with the same port are one registry, because a registry on
 * the same machine reports whichever name the pushing client used.
 */
import { DOCKER_HUB, isLoopbackHost, parseRepositoryRef } from '../../scan/registry/index.js';
import type { EventImage } from './types.js';

const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

function normalHost(host: string): string {
  const h = host.toLowerCase();
  if (DOCKER_HUB_ALIASES.has(h)) return DOCKER_HUB;
  if (isLoopbackHost(h)) {
    const port = /:(\d+)$/.exec(h.startsWith('[') ? h.slice(h.indexOf(']')) : h)?.[1] ?? '';
    return `loopback:${port}`;
  }
  return h;
}

function normalPath(host: string, path: string): string {
  return host === DOCKER_HUB && !path.includes('/') ? `library/${path}` : path;
}

/**
 * A predicate for the images of `spec.image`, or undefined when `spec.image` does not parse.
 * An image without a registry (Nexus names only the path) matches on the path alone.
 */
export function imageMatcher(specImage: string): ((image: EventImage) => boolean) | undefined {
  let host: string;
  let path: string;
  try {
    const ref = parseRepositoryRef(specImage);
    host = normalHost(ref.registry);
    path = ref.path;
  } catch {
    return undefined;
  }
  return (image) => {
    if (!image.path) return false;
    if (image.registry === undefined) return image.path === path;
    const h = normalHost(image.registry);
    return h === host && normalPath(h, image.path) === path;
  };
}
