/**
 * Finding Flux's setter markers: a scalar followed on its own line by a comment
 * `# {"$imagepolicy": "NAMESPACE:POLICY[:tag|:name|:digest]"}`.
 *
 * Positions are source ranges (from simple.ts's reader, or the `yaml` Document API's node
 * ranges); nothing here re-serialises a document, so callers can splice the original text.
 */
import type { ImageField } from '../../image/index.js';
import type { Scalar } from 'yaml';
import { readSimple } from './simple.js';
import { yamlLibrary } from './yaml.js';

/** How the scalar is written in the file; a rewrite keeps it where it can. */
export type ScalarStyle = 'plain' | 'single' | 'double' | 'block';

export interface Marker {
  /** Path relative to the repository root, '/' separators. */
  file: string;
  /** 1-based line of the scalar. */
  line: number;
  /** As written in the marker: "ns:policy" or "ns:policy:tag". */
  setter: string;
  policy: { namespace: string; name: string };
  field: ImageField;
  /** The scalar's current value (decoded, before tag resolution, as Flux's kyaml sees it). */
  value: string;
  /**
   * Source range of the scalar token in the file text, quotes included, anchors and tags
   * excluded. Offsets index the JS string passed to `findMarkers` (UTF-16 units), which is
   * what splicing that string needs.
   */
  start: number;
  end: number;
  style: ScalarStyle;
  /** The scalar sits inside a flow collection (`[…]`/`{…}`), where `,[]{}` need quoting. */
  inFlow: boolean;
}

/** The screening token: Flux only parses files whose text contains it. */
export const MARKER_TOKEN = '"$imagepolicy"';

const FIELDS: ReadonlySet<string> = new Set(['tag', 'name', 'digest']);

/** Splits a setter name the way Flux defines them: `ns:policy` and `ns:policy:{tag,name,digest}`. */
export function parseSetterName(
  setter: string,
): { policy: { namespace: string; name: string }; field: ImageField } | null {
  const parts = setter.split(':');
  const [namespace, name, suffix] = parts;
  if (namespace === undefined || name === undefined || namespace === '' || name === '') return null;
  if (parts.length === 2) return { policy: { namespace, name }, field: 'image' };
  if (parts.length === 3 && suffix !== undefined && FIELDS.has(suffix)) {
    return { policy: { namespace, name }, field: suffix as ImageField };
  }
  return null;
}

/**
 * Reads a comment body the way kyaml's fieldmeta does: leading `#`s trimmed, the rest must be
 * a JSON object of strings with a non-empty `$imagepolicy`. Anything else is an ordinary comment.
 */
export function setterFromComment(comment: string): string | null {
  if (!comment.includes(MARKER_TOKEN)) return null;
  const body = comment.replace(/^#+/, '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  const entries = Object.entries(parsed);
  if (entries.some(([, v]) => typeof v !== 'string')) return null;
  const setter = (parsed as Record<string, string>)['$imagepolicy'];
  return setter ? setter : null;
}

/** The comment that ends the line at `pos`, if only blanks stand between. */
function trailingComment(text: string, pos: number, inFlow: boolean): string | null {
  let i = pos;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
  // In a flow collection written one item a line, the comment follows the item's comma.
  if (inFlow && text[i] === ',') {
    i++;
    const afterComma = i;
    while (i < text.length && (text[i] === ' ' || text[i] === '\t')) i++;
    if (i === afterComma) return null;
  }
  if (text[i] !== '#' || (i === pos && pos > 0)) return null;
  let j = text.indexOf('\n', i);
  if (j < 0) j = text.length;
  if (text[j - 1] === '\r') j--;
  return text.slice(i + 1, j);
}

function styleOf(type: Scalar['type']): ScalarStyle {
  switch (type) {
    case 'QUOTE_SINGLE':
      return 'single';
    case 'QUOTE_DOUBLE':
      return 'double';
    case 'BLOCK_FOLDED':
    case 'BLOCK_LITERAL':
      return 'block';
    default:
      return 'plain';
  }
}

/**
 * Start offsets of the chunks that begin at a `---` line; YAML forbids such a line inside any node.
 * Plain string searches, not multi-line regular expressions: this runs over every byte of every
 * marked file, in processes too short-lived for V8 to compile the expressions to machine code.
 */
function documentChunks(text: string): number[] {
  const starts = [0];
  // Directives belong to the document after them; splitting around them would orphan them.
  if (text.startsWith('%') || text.includes('\n%') || text.includes('\r%')) return starts;
  for (let i = text.indexOf('---', 1); i >= 0; i = text.indexOf('---', i + 3)) {
    const before = text.charCodeAt(i - 1);
    const after = text.charCodeAt(i + 3);
    // At a line's start (YAML's breaks are LF and CR), then the end, a space, a tab or a break.
    if (
      (before === 10 || before === 13) &&
      (isNaN(after) || after === 32 || after === 9 || after === 13 || after === 10)
    )
      starts.push(i);
  }
  return starts;
}

/**
 * 1-based line numbers for offsets, counted on from the offset asked before: markers are found
 * in order, so a file's newlines are counted once, and only up to its last marker.
 */
export class LineCounter {
  private at = 0;
  private count = 1;
  constructor(private readonly text: string) {}
  line(offset: number): number {
    if (offset < this.at) {
      this.at = 0;
      this.count = 1;
    }
    for (let i = this.text.indexOf('\n', this.at); i >= 0 && i < offset; i = this.text.indexOf('\n', i + 1))
      this.count++;
    this.at = offset;
    return this.count;
  }
}

/**
 * The markers in one file. A file that does not parse yields no markers and an error naming
 * the line, so the caller can report it (Flux lists such files as problems and leaves them).
 *
 * Only the documents (`---` chunks) whose text contains the marker token are read: the
 * others cannot hold a marker, and parsing YAML is the expensive part of a scan. A syntax
 * error in a document without markers therefore goes unreported (Flux would refuse the whole
 * file); the documents that are rewritten are always fully parsed. A marked document in the
 * plain subset most manifests use is read by `readSimple` (simple.ts); any other is composed
 * with the `yaml` Document API, which also words the error when there is one.
 */
export function findMarkers(text: string, file: string): { markers: Marker[]; error: string | null } {
  return scanMarkers(text, file, true);
}

/** `findMarkers` with every marked document composed by the `yaml` library (the reference for tests). */
export function findMarkersByLibrary(
  text: string,
  file: string,
): { markers: Marker[]; error: string | null } {
  return scanMarkers(text, file, false);
}

interface Setter {
  setter: string;
  policy: { namespace: string; name: string };
  field: ImageField;
}

function scanMarkers(
  text: string,
  file: string,
  simple: boolean,
): { markers: Marker[]; error: string | null } {
  const markers: Marker[] = [];
  if (!text.includes(MARKER_TOKEN)) return { markers, error: null };
  let lines: LineCounter | undefined;
  const lineOf = (offset: number): number => (lines ??= new LineCounter(text)).line(offset);
  const starts = documentChunks(text);
  for (let c = 0; c < starts.length; c++) {
    const from = starts[c]!;
    const to = starts[c + 1] ?? text.length;
    const chunk = from === 0 && to === text.length ? text : text.slice(from, to);
    if (!chunk.includes(MARKER_TOKEN)) continue;
    // Only scalars that end on a line holding the marker token need a closer look.
    const tokenLines: [number, number][] = [];
    for (let t = chunk.indexOf(MARKER_TOKEN); t >= 0; t = chunk.indexOf(MARKER_TOKEN, t + 1)) {
      const ls = chunk.lastIndexOf('\n', t) + 1;
      const le = chunk.indexOf('\n', t);
      if (tokenLines.length === 0 || tokenLines[tokenLines.length - 1]![0] !== ls) {
        tokenLines.push([ls, le < 0 ? chunk.length : le]);
      }
    }
    const onTokenLine = (pos: number): boolean => {
      let lo = 0;
      let hi = tokenLines.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        // Indexed, not destructured: without the optimizing compiler (one-shot commands), an
        // array pattern runs the iterator protocol and allocates, once a value scalar.
        const line = tokenLines[mid]!;
        const ls = line[0];
        const le = line[1];
        if (pos < ls) hi = mid - 1;
        else if (pos > le) lo = mid + 1;
        else return true;
      }
      return false;
    };
    /** The setter marking the value scalar at [s, e), if any. */
    const setterAt = (s: number, e: number, style: ScalarStyle, inFlow: boolean): Setter | null => {
      // A block scalar's comment follows its header (`| # …`), not its content.
      const commentAt = style === 'block' ? headerEnd(chunk, s) : e;
      if (!onTokenLine(commentAt)) return null;
      const comment = trailingComment(chunk, commentAt, inFlow);
      if (comment === null) return null;
      const setter = setterFromComment(comment);
      if (setter === null) return null;
      const parsed = parseSetterName(setter);
      return parsed ? { setter, ...parsed } : null;
    };
    const push = (
      s: number,
      e: number,
      style: ScalarStyle,
      inFlow: boolean,
      found: Setter,
      value: string,
    ): void => {
      markers.push({
        file,
        line: lineOf(from + s),
        setter: found.setter,
        policy: found.policy,
        field: found.field,
        value,
        start: from + s,
        end: from + e,
        style,
        inFlow,
      });
    };

    if (simple) {
      const before = markers.length;
      const ok = readSimple(chunk, (s, e, style, inFlow) => {
        const found = setterAt(s, e, style, inFlow);
        if (found === null) return;
        // One-line scalars without escapes: the value is the text, quotes removed.
        const value =
          style === 'plain'
            ? chunk.slice(s, e)
            : style === 'double'
              ? chunk.slice(s + 1, e - 1)
              : chunk.slice(s + 1, e - 1).replace(/''/g, "'");
        push(s, e, style, inFlow, found, value);
      });
      if (ok) continue;
      markers.length = before;
    }

    const { isMap, isPair, isScalar, isSeq, parseDocument } = yamlLibrary();
    const doc = parseDocument(chunk, { prettyErrors: false, keepSourceTokens: false, logLevel: 'error' });
    const err = doc.errors[0];
    if (err) {
      const line = lineOf(from + (err.pos[0] ?? 0));
      return {
        markers: [],
        error: `line ${line}: ${err.message.replace(/\s+at line \d+, column \d+:?[\s\S]*$/, '')}`,
      };
    }
    const onScalar = (node: Scalar, inFlow: boolean): void => {
      if (!node.range) return;
      const [s, e] = node.range;
      const style = styleOf(node.type);
      const found = setterAt(s, e, style, inFlow);
      if (found === null) return;
      const raw: unknown = (node as Scalar & { source?: unknown }).source;
      const value =
        typeof raw === 'string' ? raw : typeof node.value === 'string' ? node.value : String(node.value);
      push(s, e, style, inFlow, found, value);
    };
    // Values only, as Flux's setter filter: map values, sequence items, a root scalar; never keys.
    const walk = (node: unknown, inFlow: boolean): void => {
      if (isScalar(node)) onScalar(node, inFlow);
      else if (isMap(node) || isSeq(node)) {
        const flow = inFlow || node.flow === true;
        for (const item of node.items) walk(item, flow);
      } else if (isPair(node)) walk(node.value, inFlow);
    };
    walk(doc.contents, false);
  }
  return { markers, error: null };
}

/** End of a block scalar's header indicators (`|`, `>`, chomping, indentation digits). */
function headerEnd(text: string, start: number): number {
  let i = start;
  while (i < text.length && /[|>+\-0-9]/.test(text[i]!)) i++;
  return i;
}
