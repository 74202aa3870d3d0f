/** Reading marker values into the parts the guard orders (pure). */
import {
  isDigest,
  isValidTag,
  repositoryProblem as imageRepositoryProblem,
  splitImage,
} from '../image/index.js';
import type { MarkerField } from './types.js';

export interface MarkerValue {
  /** As written in the file. */
  value: string;
  /** The tag the value carries or pairs with; null when none (a `:name` line, or `nginx@sha256:…`). */
  tag: string | null;
  /** The image name the value carries or pairs with. */
  name: string | null;
  digest?: string | null;
}

/**
 * Splits a marker value by its field: `image` is `name[:tag][@digest]` (a port in the registry
 * host is not a tag: the tag is after the last `/`), `tag`, `name`, `digest` are one part each.
 */
export function parseMarkerValue(field: MarkerField, value: string): MarkerValue {
  const v = value.trim();
  switch (field) {
    case 'tag':
      return { value, tag: v, name: null, digest: null };
    case 'name':
      return { value, tag: null, name: v, digest: null };
    case 'digest':
      return { value, tag: null, name: null, digest: v };
    case 'image':
      return { value, ...splitImage(v) };
  }
}

/**
 * Docker's familiar names (`nginx`, `docker.io/nginx`, `index.docker.io/library/nginx`) name one
 * image; a retarget must not fire between spellings of the same repository. The rules are
 * src/image/'s, the same the scanner uses.
 */
export { normalizedName as canonicalImageName, sameImageName } from '../image/index.js';

/**
 * Why the value of a marked line is not what its field holds (an image reference, a tag, a
 * repository name, a digest); null when it is, or when the line is empty (nothing there yet).
 * A value like `app:a b` or `app:../../x` cannot be ordered, and must not be mistaken for the
 * name of another image either.
 */
export function markerValueProblem(field: MarkerField, value: string): string | null {
  const v = value.trim();
  if (v === '') return null;
  const tagProblem = (t: string) => (isValidTag(t) ? null : `${JSON.stringify(t)} is not a tag`);
  const nameProblem = (n: string) =>
    imageRepositoryProblem(n) === undefined ? null : `${JSON.stringify(n)} is not an image name`;
  const digestProblem = (d: string) => (isDigest(d) ? null : `${JSON.stringify(d)} is not a digest`);
  switch (field) {
    case 'tag':
      return tagProblem(v);
    case 'name':
      return nameProblem(v);
    case 'digest':
      return digestProblem(v);
    case 'image': {
      const p = parseMarkerValue('image', v);
      return (
        nameProblem(p.name ?? '') ??
        (p.tag === null ? null : tagProblem(p.tag)) ??
        (p.digest ? digestProblem(p.digest) : p.digest === '' ? 'the digest after "@" is empty' : null)
      );
    }
  }
}
