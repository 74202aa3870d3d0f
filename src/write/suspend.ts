/**
 * `spec.suspend` spliced into the YAML file that defines an object (`pawl suspend|resume`): only
 * the bytes of that one field change — a value replaced, one line inserted, or the line removed
 * — and every other byte, comment and quote of the file stays as it was.
 */
import { yamlLibrary } from './setters/yaml.js';

export interface ObjectId {
  kind: string;
  namespace: string;
  name: string;
}

export type SuspendSplice =
  { changed: true; text: string; line: number } | { changed: false; why: string } | { error: string };

/**
 * The file's text with the object's `spec.suspend` set (`suspend`) or removed (`!suspend`, a
 * `suspend: false` the same). A document without metadata.namespace matches any namespace: the
 * loader (or kustomize) gave it the one it has.
 */
export function spliceSuspend(text: string, id: ObjectId, suspend: boolean): SuspendSplice {
  const Y = yamlLibrary();
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  for (const doc of Y.parseAllDocuments(text)) {
    if (!('contents' in doc)) continue;
    const root = doc.contents;
    const scalar = (map: unknown, key: string): unknown => {
      const node = Y.isMap(map) ? map.get(key, true) : undefined;
      return Y.isScalar(node) ? node.value : undefined;
    };
    if (!Y.isMap(root) || scalar(root, 'kind') !== id.kind) continue;
    const meta = root.get('metadata', true);
    if (!Y.isMap(meta) || scalar(meta, 'name') !== id.name) continue;
    const ns = scalar(meta, 'namespace');
    if (ns !== undefined && ns !== id.namespace) continue;
    const what = `${id.kind} ${id.namespace}/${id.name}`;
    const spec = root.get('spec', true);
    if (!Y.isMap(spec) || spec.flow || !spec.range)
      return { error: `${what} has no block-style spec: mapping to add suspend to; edit it by hand` };
    const pair = spec.items.find((p) => Y.isScalar(p.key) && p.key.value === 'suspend');
    if (pair) {
      const key = pair.key;
      const value = pair.value;
      if (!Y.isScalar(key) || !key.range || !Y.isScalar(value) || !value.range)
        return { error: `${what}: spec.suspend is not a plain true or false; edit it by hand` };
      if (value.value === suspend)
        return { changed: false, why: `${what} already has spec.suspend: ${suspend}` };
      if (suspend) {
        return {
          changed: true,
          text: text.slice(0, value.range[0]) + 'true' + text.slice(value.range[1]),
          line: lineOf(text, value.range[0]),
        };
      }
      // The whole line goes when it holds nothing but this field (and maybe a comment).
      const start = text.lastIndexOf('\n', key.range[0] - 1) + 1;
      const end = text.indexOf('\n', value.range[1]);
      const lineEnd = end === -1 ? text.length : end + 1;
      const before = text.slice(start, key.range[0]);
      const after = text.slice(value.range[1], end === -1 ? text.length : end).replace(/\r$/, '');
      if (/^[ \t]*$/.test(before) && /^[ \t]*(#.*)?$/.test(after))
        return { changed: true, text: text.slice(0, start) + text.slice(lineEnd), line: lineOf(text, start) };
      return {
        changed: true,
        text: text.slice(0, value.range[0]) + 'false' + text.slice(value.range[1]),
        line: lineOf(text, value.range[0]),
      };
    }
    if (!suspend) return { changed: false, why: `${what} is not suspended (no spec.suspend)` };
    const first = spec.items[0]?.key;
    if (!Y.isNode(first) || !first.range)
      return { error: `${what} has an empty spec; add suspend: true by hand` };
    // A line of its own before the first field, at that field's indentation.
    const start = text.lastIndexOf('\n', first.range[0] - 1) + 1;
    const indent = text.slice(start, first.range[0]);
    if (!/^[ \t]*$/.test(indent))
      return { error: `${what}: spec's first field does not start its line; add suspend: true by hand` };
    return {
      changed: true,
      text: text.slice(0, start) + `${indent}suspend: true${eol}` + text.slice(start),
      line: lineOf(text, start),
    };
  }
  return { error: `${id.kind} ${id.namespace}/${id.name} is not defined in this file` };
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
