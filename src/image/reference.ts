/**
 * Image references as Docker reads them (distribution/reference: the grammar of `Parse`, the
 * normalisation of `ParseNormalizedNamed`). The one place pawl parses or normalises an image
 * name: configuration checks `spec.image` with it, the scanner finds the registry with it, the
 * guard compares marker values with it and the setters split `--image` values with it.
 *
 * Normalisation (splitDockerDomain): the first path component is a registry host when it has a
 * `.` or `:`, is `localhost`, or has an uppercase letter; otherwise the image is on Docker Hub
 * (`docker.io`), where a single-component name belongs to `library/`. `index.docker.io` is
 * Docker Hub's legacy name and becomes `docker.io`; pawl also folds `registry-1.docker.io`, Docker
 * Hub's API host, which Docker leaves as written. Hosts keep the case they were written in.
 */

export const DOCKER_HUB = 'docker.io';
/** Docker Hub's API host: `docker.io` itself serves no registry API. */
export const DOCKER_HUB_API = 'registry-1.docker.io';
const DOCKER_HUB_ALIASES = new Set(['index.docker.io', DOCKER_HUB_API]);
const LIBRARY = 'library/';
/** distribution/reference's NameTotalLengthMax. */
const NAME_MAX = 255;

const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*';
const NAME = new RegExp(`^(?:(${DOMAIN})/)?(${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)$`);
/** The OCI distribution spec's tag grammar (`[\w][\w.-]{0,127}`). */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const IDENTIFIER = /^[a-f0-9]{64}$/;
const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//;

/** The part of an image reference a setter marker sets: the whole `name:tag[@digest]`, or one part. */
export type ImageField = 'image' | 'tag' | 'name' | 'digest';

export class ImageReferenceError extends Error {
  override name = 'ImageReferenceError';
}

/** The OCI distribution tag grammar, in words for error messages. */
export const TAG_RULE =
  'a tag is 1 to 128 characters: letters, digits and "_" first, then letters, digits, "_", "." and "-"';

/** A valid tag: letters, digits, `_`, `.` and `-`, up to 128, not starting with `.` or `-`. */
export function isValidTag(tag: string): boolean {
  return TAG.test(tag);
}

/** True for a digest like `sha256:…` (an algorithm, `:`, at least 32 hex digits). */
export function isDigest(s: string): boolean {
  return DIGEST.test(s);
}

/** A repository name split into its registry host and its path, normalised as Docker does. */
export interface ImageName {
  /** Registry host[:port] (`docker.io`, `ghcr.io`, `localhost:5000`). */
  domain: string;
  /** Repository path (`library/nginx`, `org/app`). */
  path: string;
  /** `domain/path`: the canonical name two spellings of one repository share. */
  name: string;
}

/** A full reference: a name with an optional tag and digest. */
export interface ImageReference extends ImageName {
  tag?: string;
  digest?: string;
}

/**
 * Docker's splitDockerDomain (plus the `registry-1.docker.io` alias). Lexical only: the name is
 * not validated, so it also gives a comparable name for values that are not valid references.
 */
export function splitDomain(name: string): ImageName {
  const i = name.indexOf('/');
  const first = i < 0 ? '' : name.slice(0, i);
  let domain: string;
  let path: string;
  if (i < 0 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    domain = DOCKER_HUB;
    path = name;
  } else {
    domain = first;
    path = name.slice(i + 1);
  }
  if (DOCKER_HUB_ALIASES.has(domain)) domain = DOCKER_HUB;
  if (domain === DOCKER_HUB && !path.includes('/')) path = LIBRARY + path;
  return { domain, path, name: `${domain}/${path}` };
}

/**
 * Why `image` is not a valid repository name (no scheme, tag or digest), with what to write
 * instead; undefined when it is valid. For ImageRepository `spec.image`.
 */
export function repositoryProblem(image: string): string | undefined {
  const scheme = SCHEME.exec(image);
  if (scheme) {
    const rest = image
      .slice(scheme[0].length)
      .replace(/@.*$/, '')
      .replace(/:[\w][\w.-]*$/, '')
      .replace(/\/+$/, '');
    return `"${image}" has a scheme (${scheme[1]}://); write the repository without it, e.g. "${rest}"`;
  }
  const at = image.indexOf('@');
  if (at >= 0) {
    return `"${image}" has a digest; spec.image names a repository only, e.g. "${image.slice(0, at)}" (the policy picks the tag)`;
  }
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  if (colon >= 0 && TAG.test(image.slice(colon + 1))) {
    return `"${image}" has a tag; spec.image names a repository only, e.g. "${image.slice(0, colon)}" (the policy picks the tag)`;
  }
  if (image.length > NAME_MAX) return `"${image.slice(0, 40)}…" is longer than ${NAME_MAX} characters`;
  if (IDENTIFIER.test(image)) {
    return `"${image}" is an image ID, not a repository; write it like "ghcr.io/org/app" or "nginx"`;
  }
  if (!NAME.exec(image)) {
    if (/[A-Z]/.test(splitDomain(image).path)) {
      return `"${image}" is not a valid image repository: the path must be lowercase`;
    }
    return `"${image}" is not a valid image repository; write it like "ghcr.io/org/app" or "nginx"`;
  }
  return undefined;
}

/** A repository name (no tag, no digest), normalised; throws ImageReferenceError saying what to write. */
export function parseRepository(image: string): ImageName {
  const trimmed = image.trim();
  if (trimmed === '')
    throw new ImageReferenceError('the image is empty; write it like "ghcr.io/org/app" or "nginx"');
  const problem = repositoryProblem(trimmed);
  if (problem) throw new ImageReferenceError(problem);
  return splitDomain(trimmed);
}

/**
 * `name[:tag][@digest]` as Docker's ParseNormalizedNamed reads it; throws ImageReferenceError
 * naming what is wrong (a scheme, a bad tag or digest, an uppercase path, an image ID).
 */
export function parseReference(ref: string): ImageReference {
  const trimmed = ref.trim();
  if (SCHEME.test(trimmed)) {
    throw new ImageReferenceError(
      `"${ref}" has a scheme; write the image without it, e.g. "${trimmed.replace(/^[^:]+:\/\//, '')}"`,
    );
  }
  const { name, tag, digest } = splitImage(trimmed);
  if (digest !== null && !isDigest(digest))
    throw new ImageReferenceError(
      `"${ref}" has an invalid digest "${digest}"; expected e.g. "sha256:<64 hex digits>"`,
    );
  if (tag !== null && !TAG.test(tag))
    throw new ImageReferenceError(
      `"${ref}" has an invalid tag "${tag}" (letters, digits, "_", "." and "-", up to 128, not starting with "." or "-")`,
    );
  return {
    ...parseRepository(name),
    ...(tag !== null ? { tag } : {}),
    ...(digest !== null ? { digest } : {}),
  };
}

/**
 * Splits `name[:tag][@digest]` without validating: the digest follows the `@`, the tag follows the
 * last `:` after the last `/` (a `:` before it is a registry port).
 */
export function splitImage(value: string): { name: string; tag: string | null; digest: string | null } {
  const at = value.lastIndexOf('@');
  const rest = at >= 0 ? value.slice(0, at) : value;
  const digest = at >= 0 ? value.slice(at + 1) : null;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/'))
    return { name: rest.slice(0, colon), tag: rest.slice(colon + 1), digest };
  return { name: rest, tag: null, digest };
}

/** The canonical `domain/path` of a repository name (`nginx` → `docker.io/library/nginx`). */
export function normalizedName(name: string): string {
  return splitDomain(name.trim()).name;
}

/** Whether two names spell one repository (`nginx`, `docker.io/nginx`, `index.docker.io/library/nginx`). */
export function sameImageName(a: string, b: string): boolean {
  return normalizedName(a) === normalizedName(b);
}

/** Docker's short form for messages (FamiliarName): `nginx`, `org/app`, `ghcr.io/org/app`. */
export function familiarName(name: Pick<ImageName, 'domain' | 'path'>): string {
  if (name.domain !== DOCKER_HUB) return `${name.domain}/${name.path}`;
  return name.path.startsWith(LIBRARY) && name.path.split('/').length === 2
    ? name.path.slice(LIBRARY.length)
    : name.path;
}

/** True for hosts reached over plain HTTP by default, as Docker does: localhost and loopback IPs. */
export function isLoopbackHost(hostPort: string): boolean {
  const host = hostPort.startsWith('[')
    ? hostPort.slice(1, hostPort.indexOf(']'))
    : hostPort.replace(/:\d+$/, '');
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
}
