/**
 * Bounds on what pawl reads into memory before the YAML parser sees it. The yaml library holds
 * some 30 bytes of nodes per byte of a scalar it parses: a 50 MB value in one document took
 * `pawl serve` to 1.7 GB, over the 512 MiB of the documented pod. So a file (or a kustomize
 * build) larger than its limit is not read at all, and a document larger than its limit is cut
 * out of the text — line count kept, so every other document keeps its lines — before parsing.
 *
 * The defaults are far above real Flux repositories (the largest document of flux2's own
 * gotk-components.yaml, a CRD, is about 200 KB; a whole cluster's build a few MB) and at or
 * below Kubernetes' own limit of about 1.5 MiB per object.
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { CONFIG_MAPS, type Kind } from './types.js';

export interface SizeLimits {
  /** A `-c` file, a file a kustomization reads, a kustomization file. Default 16 MiB. */
  fileBytes: number;
  /** One YAML document of a file or of a build. Default 1 MiB. */
  documentBytes: number;
  /** The output of one kustomize build. Default 64 MiB. */
  buildBytes: number;
  /** One key's file under `--secrets-dir` (Kubernetes allows 1 MiB per Secret). Default 1 MiB. */
  secretKeyBytes: number;
}

const KiB = 1024;
const MiB = 1024 * 1024;

export const DEFAULT_LIMITS: SizeLimits = {
  fileBytes: 16 * MiB,
  documentBytes: 1 * MiB,
  buildBytes: 64 * MiB,
  secretKeyBytes: 1 * MiB,
};

/** A limit in words: `16 MiB`, `1 KiB`, `500 bytes`. */
export function limitWords(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes / KiB} KiB`;
  return `${bytes} bytes`;
}

/** A measured size in words: `50.0 MiB`, `2.1 KiB`, `12 bytes`. */
export function sizeWords(bytes: number): string {
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(1)} MiB`;
  if (bytes >= KiB) return `${(bytes / KiB).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

/**
 * A text that names one of pawl's kinds (YAML or JSON spelling): only those are parsed at all,
 * and only such an oversized text is an error rather than a warning.
 */
export const MENTIONS_PAWL_KIND =
  /\bkind["']?\s*:\s*["']?(ImageRepository|ImagePolicy|ImageUpdateAutomation|GitRepository|Receiver|Secret|Provider|Alert)\b/;

export type BoundedRead = { text: string } | { tooBig: number; mentionsPawlKind: boolean };

/**
 * A file's text, unless it is larger than `max` bytes: then only its size, and whether it names
 * one of pawl's kinds (read in chunks, never held whole). The size is checked again while
 * reading, for a file that grows between the stat and the read.
 */
export async function readBounded(path: string, max: number): Promise<BoundedRead> {
  const st = await stat(path);
  if (st.size > max) return { tooBig: st.size, mentionsPawlKind: await streamMentionsPawlKind(path) };
  const f = await open(path, 'r');
  try {
    const buf = Buffer.alloc(Math.min(max, st.size) + 1);
    let got = 0;
    for (;;) {
      const { bytesRead } = await f.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
      if (got === buf.length) {
        const rest = (await f.stat()).size;
        if (rest > max) return { tooBig: rest, mentionsPawlKind: await streamMentionsPawlKind(path) };
        break;
      }
    }
    return { text: buf.subarray(0, got).toString('utf8') };
  } finally {
    await f.close();
  }
}

async function streamMentionsPawlKind(path: string): Promise<boolean> {
  let carry = '';
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 256 * KiB })) {
    const s = carry + (chunk as string);
    if (MENTIONS_PAWL_KIND.test(s)) return true;
    // Enough of the end to hold a mention cut in two.
    carry = s.slice(-64);
  }
  return false;
}

/** A document cut out of a text for its size. */
export interface OversizedDocument {
  /** 1-based, counting documents with content, as a person counts them. */
  index: number;
  /** The document's first content line. */
  line: number;
  bytes: number;
  /** Read off the text without parsing it; absent when it could not be told. */
  kind?: string;
  namespace?: string;
  name?: string;
  /** One of pawl's kinds (or may be: a document pawl cannot identify that names one). */
  ours: boolean;
}

/** What a cut-out document is replaced with: a comment, so the document still counts. */
const CUT = '# pawl: this document was not read (over the size limit)';
const MARKER = /^(?:---|\.\.\.)(?:[ \t\r\n]|$)/;
const CONTENT_LINE = /^(?![ \t]*(?:#|$))/m;
const KINDS = new Set(Object.keys(CONFIG_MAPS));

/** One document's stretch of a text: from its `---` line (if any) to the next one. */
export interface Segment {
  text: string;
  /** 1-based line of the segment's first line (its `---`, when it has one). */
  line: number;
  /** Line breaks in it. */
  breaks: number;
}

/**
 * A text cut at its document boundaries, `---` and `...` at the start of a line, which YAML
 * forbids inside any content: no parsing is needed to find them, and a document can be parsed
 * (or left alone) on its own. Joined, the segments are the text.
 */
export function documentSegments(text: string): Segment[] {
  const out: Segment[] = [];
  let segStart = 0;
  let segLine = 1;
  let line = 1;
  for (let at = 0; at < text.length;) {
    const nl = text.indexOf('\n', at);
    const next = nl < 0 ? text.length : nl + 1;
    if (at > segStart && MARKER.test(text.slice(at, at + 4))) {
      out.push({ text: text.slice(segStart, at), line: segLine, breaks: line - segLine });
      segStart = at;
      segLine = line;
    }
    at = next;
    line++;
  }
  if (segStart < text.length || out.length === 0) {
    const breaks = line - segLine - (text.length > 0 && !text.endsWith('\n') ? 1 : 0);
    out.push({ text: text.slice(segStart), line: segLine, breaks });
  }
  return out;
}

/** Whether a segment holds a document: anything but blank lines, comments and its marker. */
function hasContent(seg: string): boolean {
  const markerLen = MARKER.test(seg) ? 3 : 0;
  const body = seg.slice(markerLen);
  return body.includes(CUT) || CONTENT_LINE.test(body.replace(/^[ \t]*(?:#.*)?/, ''));
}

/**
 * The text with every document over `max` bytes replaced by a comment and as many line breaks
 * as it had, and what was cut.
 */
export function cutOversizedDocuments(
  text: string,
  max: number,
): { text: string; oversized: OversizedDocument[] } {
  // Nothing to do for the common case; the byte length of a string is at most 3 × its length.
  if (text.length <= max / 3 || Buffer.byteLength(text) <= max) return { text, oversized: [] };
  const oversized: OversizedDocument[] = [];
  const out: string[] = [];
  let index = 0;
  for (const seg of documentSegments(text)) {
    if (!hasContent(seg.text)) {
      out.push(seg.text);
      continue;
    }
    index++;
    const bytes = Buffer.byteLength(seg.text);
    if (bytes <= max) {
      out.push(seg.text);
      continue;
    }
    const markerLen = MARKER.test(seg.text) ? 3 : 0;
    oversized.push({
      index,
      line: firstContentLine(seg.text, seg.line, markerLen),
      bytes,
      ...identify(seg.text),
    });
    out.push(`${seg.text.slice(0, markerLen)}${markerLen ? ' ' : ''}${CUT}${'\n'.repeat(seg.breaks)}`);
  }
  return { text: out.join(''), oversized };
}

function firstContentLine(seg: string, segLine: number, markerLen: number): number {
  let line = segLine;
  let at = 0;
  for (;;) {
    const nl = seg.indexOf('\n', at);
    const l = seg.slice(at === 0 ? markerLen : at, nl < 0 ? seg.length : nl);
    if (/^[ \t]*[^#\s]/.test(l) || nl < 0) return line;
    at = nl + 1;
    line++;
  }
}

/** Kind, namespace and name as written at the top level of a block-style document. */
function identify(seg: string): Pick<OversizedDocument, 'kind' | 'namespace' | 'name' | 'ours'> {
  const kind = /^kind:[ \t]*["']?([A-Za-z][\w.-]*)/m.exec(seg)?.[1];
  const meta = /^metadata:[ \t]*$/m.exec(seg);
  const after = meta ? seg.slice(meta.index) : '';
  const name = /^[ ]{2}name:[ \t]*["']?([^\s"'#]+)/m.exec(after)?.[1];
  const namespace = /^[ ]{2}namespace:[ \t]*["']?([^\s"'#]+)/m.exec(after)?.[1];
  const ours = kind !== undefined ? KINDS.has(kind) || kind === 'List' : MENTIONS_PAWL_KIND.test(seg);
  return {
    ...(kind !== undefined ? { kind } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ours,
  };
}

/** Whether `kind` is one of pawl's (for a placeholder of a document that was cut out). */
export const isPawlKind = (kind: string | undefined): kind is Kind => kind !== undefined && KINDS.has(kind);
