/** Reading marker values into the parts the guard orders (pure). */
import { splitImage } from '../image/index.js';
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
