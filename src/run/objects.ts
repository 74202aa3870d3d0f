/**
 * Which Kubernetes object holds each marker, for Flux's commit message data
 * (`.Changed.Objects`, `.Changed.FileChanges`). Only files that change are parsed again.
 */
import { parseAllDocuments } from 'yaml';

export interface ObjectId {
  apiVersion?: string;
  kind: string;
  namespace: string;
  name: string;
}

/** The object of the YAML document containing `offset` (a `findMarkers` range start). */
export function objectsAt(text: string, offsets: readonly number[]): ObjectId[] {
  const docs = parseAllDocuments(text, { logLevel: 'error' });
  const list = Array.isArray(docs) ? docs : [docs];
  return offsets.map((offset) => {
    const doc = list.find((d) => d.range[0] <= offset && offset <= d.range[2]) ?? list[0];
    const js: unknown = doc?.contents ? doc.toJS({ maxAliasCount: -1 }) : null;
    const o = (js && typeof js === 'object' ? js : {}) as {
      apiVersion?: unknown;
      kind?: unknown;
      metadata?: { name?: unknown; namespace?: unknown };
    };
    const str = (v: unknown) => (typeof v === 'string' ? v : '');
    return {
      ...(typeof o.apiVersion === 'string' ? { apiVersion: o.apiVersion } : {}),
      kind: str(o.kind),
      namespace: str(o.metadata?.namespace),
      name: str(o.metadata?.name),
    };
  });
}
