/**
 * Byte-exact rewriting: the new value replaces only the marked scalar's token; every other
 * byte of the file (comments, blank lines, indentation, line endings, BOM) is kept.
 */
import { splitImage } from '../../image/index.js';
import { yamlLibrary } from './yaml.js';
import type { Marker } from './markers.js';

export interface ImageValue {
  name: string;
  tag: string;
  digest?: string;
}

/** What Flux writes for a marker (internal/update/setters.go: one setter per part of LatestRef). */
export function valueFor(marker: Marker, image: ImageValue): string {
  switch (marker.field) {
    case 'image':
      return imageString(image);
    case 'tag':
      // Flux's `:tag` setter gets LatestRef.Tag alone, even when the policy has a digest.
      return image.tag;
    case 'name':
      return image.name;
    case 'digest':
      return image.digest ?? '';
  }
}

/** `name[:tag][@digest]`, as image-reflector's ImageRef.String(). */
export function imageString(image: ImageValue): string {
  let s = image.name;
  if (image.tag) s += `:${image.tag}`;
  if (image.digest) s += `@${image.digest}`;
  return s;
}

/**
 * Splits `name:tag[@digest]` like Flux's testutil.ImageToRef: the digest is what follows the
 * last `@`, the tag what follows the last `:` of the rest — unless that `:` comes before the
 * last `/`, where it is a registry port. Throws on an empty name, a missing tag or a malformed
 * digest, with the input in the message.
 */
export function parseImage(s: string): ImageValue {
  const bad = (why: string): never => {
    throw new Error(`invalid image "${s}": ${why} (expected NAME:TAG or NAME:TAG@ALGORITHM:HEX)`);
  };
  if (s.trim() !== s || s === '' || /\s/.test(s)) bad('empty or contains white space');
  const { name, tag, digest } = splitImage(s);
  // Flux's ImageToRef accepts any ALGORITHM:ENCODED digest, not only Docker's 32+ hex digits.
  if (digest !== null && !/^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(digest))
    bad(`digest "${digest}" is not ALGORITHM:HEX`);
  if (tag === null) bad('no tag');
  if (name === '') bad('no name');
  if (tag === '') bad('empty tag');
  return digest === null ? { name, tag: tag! } : { name, tag: tag!, digest };
}

const plainCache = new Map<string, boolean>();

/**
 * Whether `value` can be written as a plain scalar and read back as the same string, under the
 * YAML 1.2 core schema and YAML 1.1 (which Kubernetes tooling still uses: `yes`, `0777`,
 * `2024-01-01`…). `inFlow` adds the flow indicators.
 */
export function plainIsSafe(value: string, inFlow: boolean): boolean {
  if (inFlow && /[,[\]{}]/.test(value)) return false;
  let ok = plainCache.get(value);
  if (ok === undefined) {
    ok = computePlainSafe(value);
    if (plainCache.size > 10_000) plainCache.clear();
    plainCache.set(value, ok);
  }
  return ok;
}

function computePlainSafe(value: string): boolean {
  if (value === '' || value !== value.trim() || /[\r\n\t]/.test(value)) return false;
  // Indicators that start other tokens, and the two sequences that end a plain scalar.
  if (
    /^[-?:,[\]{}#&*!|>'"%@`]/.test(value) ||
    value.includes(': ') ||
    value.includes(' #') ||
    value.endsWith(':')
  ) {
    return false;
  }
  if (/^(?:---|\.\.\.)/.test(value)) return false;
  // No scalar type of YAML 1.1 or the 1.2 core schema (numbers, booleans, null, timestamps)
  // contains `/` or `@`: an image name is a string without asking the parser.
  if (/^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$/.test(value) && /[/@]/.test(value)) return true;
  const { parse } = yamlLibrary();
  try {
    const core: unknown = parse(`k: ${value}\n`, { schema: 'core', uniqueKeys: false, logLevel: 'error' });
    const v11: unknown = parse(`k: ${value}\n`, { version: '1.1', logLevel: 'error' });
    const read = (x: unknown): unknown =>
      x && typeof x === 'object' ? (x as Record<string, unknown>)['k'] : undefined;
    return read(core) === value && read(v11) === value;
  } catch {
    return false;
  }
}

/** YAML double-quoted form; JSON's escapes are a subset of YAML's. */
export function doubleQuoted(value: string): string {
  return JSON.stringify(value);
}

function singleQuoted(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** The token that replaces `marker`'s scalar so that it reads back as `value`, in the original style where possible. */
export function renderScalar(marker: Pick<Marker, 'style' | 'inFlow'>, value: string): string {
  switch (marker.style) {
    case 'single':
      return /[\r\n]/.test(value) ? doubleQuoted(value) : singleQuoted(value);
    case 'double':
      return doubleQuoted(value);
    case 'plain':
    case 'block':
      return plainIsSafe(value, marker.inFlow) ? value : doubleQuoted(value);
  }
}

/** A span of a text and what replaces it: `text.slice(0, start) + replacement + text.slice(end)`. */
export interface Splice {
  start: number;
  end: number;
  replacement: string;
}

/**
 * Splices new values into `text`. Each edit replaces exactly the bytes of its marker's scalar
 * token; a block scalar (`key: | # marker`) becomes a flow scalar on its header line, its
 * comment and line break kept. Edits must not overlap (markers never do).
 */
export function rewrite(text: string, edits: readonly { marker: Marker; value: string }[]): string {
  const { start, end, replacement } = splice(text, edits);
  return text.slice(0, start) + replacement + text.slice(end);
}

/**
 * `rewrite` as the one span it changes, from the first edit's start to the last edit's end: a
 * writer puts those bytes in place without building the whole new text and comparing it with
 * the old one (`writeSpliceSync`). No edits: an empty span at 0.
 */
export function splice(text: string, edits: readonly { marker: Marker; value: string }[]): Splice {
  const sorted = edits.length > 1 ? [...edits].sort((a, b) => a.marker.start - b.marker.start) : edits;
  if (sorted.length === 0) return { start: 0, end: 0, replacement: '' };
  const start = sorted[0]!.marker.start;
  let replacement = '';
  let pos = start;
  for (const { marker, value } of sorted) {
    if (marker.start < pos) throw new Error(`${marker.file}:${marker.line}: overlapping setter edits`);
    replacement += text.slice(pos, marker.start);
    if (value === marker.value) {
      replacement += text.slice(marker.start, marker.end);
    } else if (marker.style === 'block') {
      const nl = text.indexOf('\n', marker.start);
      const headerLineEnd = nl < 0 ? text.length : nl + 1;
      let indicators = marker.start;
      while (indicators < headerLineEnd && /[|>+\-0-9]/.test(text[indicators]!)) indicators++;
      replacement +=
        renderScalar({ style: 'plain', inFlow: false }, value) +
        text.slice(indicators, Math.min(headerLineEnd, marker.end));
    } else {
      replacement += renderScalar(marker, value);
    }
    pos = marker.end;
  }
  return { start, end: pos, replacement };
}
