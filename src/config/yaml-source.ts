import {
  LineCounter,
  isMap,
  isPair,
  isScalar,
  isSeq,
  parseAllDocuments,
  type Document,
  type Node,
} from 'yaml';
import { readFastYaml } from './yaml-fast.js';

/** One YAML document of a config file, as plain data plus a way back to its lines. */
export interface SourceDoc {
  file: string;
  /** Line of the document's first content line (1-based). */
  line: number;
  value: unknown;
  /** Line of the field at `path`, or of its nearest existing ancestor. */
  lineOf(path: readonly PropertyKey[]): number;
  /**
   * File of the field at `path` when it may differ from `file` (an object built by kustomize
   * whose field was set by a patch file).
   */
  fileOf?(path: readonly PropertyKey[]): string;
  /** The kustomization directory that built this document, when kustomize did. */
  via?: string;
}

export interface ParseFailure {
  file: string;
  line: number;
  message: string;
}

/**
 * Parses every document of a text: a file, or part of one starting at line `firstLine` (lines
 * are then the file's). YAML errors are reported without the source snippet the yaml library
 * would add: the offending line may be a Secret's value.
 */
export function parseDocuments(
  file: string,
  text: string,
  firstLine = 1,
): { docs: SourceDoc[]; errors: ParseFailure[] } {
  const shift = firstLine - 1;
  const fast = readFastYaml(text);
  if (fast === null) return parseWithPositions(file, text, shift);
  // Plain Flux YAML: values from the fast reader; the library parses the file only when a
  // problem asks for a line (the same documents, matched by their first line).
  let slow: SourceDoc[] | undefined;
  const lineOf = (docLine: number, path: readonly PropertyKey[]): number => {
    slow ??= parseWithPositions(file, text, shift).docs;
    return slow.find((d) => d.line === docLine)?.lineOf(path) ?? docLine;
  };
  return {
    docs: fast.map((d) => {
      const line = d.line + shift;
      return { file, line, value: d.value, lineOf: (path) => lineOf(line, path) };
    }),
    errors: [],
  };
}

/** The yaml library's Document API: every node with its position. */
function parseWithPositions(
  file: string,
  text: string,
  shift: number,
): { docs: SourceDoc[]; errors: ParseFailure[] } {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, {
    lineCounter,
    prettyErrors: false,
    uniqueKeys: true,
    // The library's own warnings (a `{{ .x }}` key "will be stringified") would reach stderr
    // through process.emitWarning; pawl reports what matters about the value itself.
    logLevel: 'error',
  });
  const docs: SourceDoc[] = [];
  const errors: ParseFailure[] = [];
  const lineAt = (offset: number): number => lineCounter.linePos(offset).line + shift;
  for (const doc of parsed) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors)
        errors.push({ file, line: lineAt(e.pos[0]), message: cleanYamlMessage(e.message) });
      continue;
    }
    if (doc.contents === null) continue;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 1000 });
    } catch (err) {
      errors.push({
        file,
        line: lineAt(doc.contents.range[0]),
        message: cleanYamlMessage(err instanceof Error ? err.message : String(err)),
      });
      continue;
    }
    const d: Document.Parsed = doc;
    docs.push({
      file,
      line: lineAt(doc.contents.range[0]),
      value,
      lineOf: (path) => lineAt(offsetOf(d.contents, path)),
    });
  }
  return { docs, errors };
}

function cleanYamlMessage(message: string): string {
  // Keep the first sentence; drop " at line N, column M" and any quoted source excerpt.
  return message
    .split('\n')[0]!
    .replace(/ at line \d+, column \d+:?$/, '')
    .trim();
}

/** Offset of the key (for map entries) or item at `path`, else of the deepest ancestor that exists. */
function offsetOf(root: Node | null, path: readonly PropertyKey[]): number {
  let node: unknown = root;
  let offset = root?.range?.[0] ?? 0;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find(
        (p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg),
      );
      if (!pair) break;
      const key = pair.key as Node;
      if (key.range) offset = key.range[0];
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item: unknown = node.items[seg];
      if (!item) break;
      const r = (item as Node).range;
      if (r) offset = r[0];
      node = item;
    } else {
      break;
    }
  }
  return offset;
}
