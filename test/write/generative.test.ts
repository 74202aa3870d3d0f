/**
 * Generative check of the setter rewrite: over many generated YAML files (comments, blank
 * lines, CRLF, BOM, quoted and plain scalars, flow and block styles, anchors and aliases,
 * multi-document files, markers on sequence items and map values), applying images changes
 * only the marked scalars' bytes and the result parses to the intended values.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { findMarkers } from '../../src/write/setters/markers.js';
import { plainIsSafe, rewrite, valueFor, type ImageValue } from '../../src/write/setters/rewrite.js';
import { planEdits } from '../../src/write/setters/apply.js';

type Style = 'plain' | 'single' | 'double';
type Field = '' | ':tag' | ':name' | ':digest';

interface ScalarNode {
  kind: 'scalar';
  value: string;
  style: Style;
  marker: { policy: number; field: Field } | null;
  anchor: boolean;
}
interface SeqNode {
  kind: 'seq';
  items: ScalarNode[];
  flow: boolean;
}
interface MapNode {
  kind: 'map';
  entries: { key: string; value: Node; blankBefore: boolean; commentBefore: boolean }[];
}
interface BlockNode {
  kind: 'block';
  lines: string[];
}
interface AliasNode {
  kind: 'alias';
}
type Node = ScalarNode | SeqNode | MapNode | BlockNode | AliasNode;

const POLICIES = 4;
const plainValues = [
  'nginx:1.25',
  'ghcr.io/org/app:v1.2.3',
  'app',
  'v1',
  'sha256:abc',
  'localhost:5000/x:1',
  'plain text',
];
const anyValues = [...plainValues, '1.10', 'true', "it's", 'a: b', '#x', '', '20240101', 'null', 'x, y'];
const tags = ['v2', '1.10', '20240101', 'true', '1e3', '0x1F', 'null', 'v1.2.3-rc.1', 'yes'];
const names = ['nginx', 'ghcr.io/org/app', 'localhost:5000/x', 'reg.io/a/b'];

const scalarArb = (markable: boolean): fc.Arbitrary<ScalarNode> =>
  fc
    .record({
      style: fc.constantFrom<Style>('plain', 'single', 'double'),
      plainValue: fc.constantFrom(...plainValues),
      anyValue: fc.constantFrom(...anyValues),
      marked: markable ? fc.boolean() : fc.constant(false),
      policy: fc.nat(POLICIES),
      field: fc.constantFrom<Field>('', ':tag', ':name', ':digest'),
      anchor: fc.boolean(),
    })
    .map((r) => ({
      kind: 'scalar',
      style: r.style,
      value: r.style === 'plain' ? r.plainValue : r.anyValue,
      marker: r.marked ? { policy: r.policy, field: r.field } : null,
      anchor: r.anchor,
    }));

const { node: nodeArb } = fc.letrec<{ node: Node; map: MapNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarArb(true),
    fc.record({
      kind: fc.constant('seq' as const),
      items: fc.array(scalarArb(true), { minLength: 1, maxLength: 4 }),
      flow: fc.boolean(),
    }),
    fc.record({
      kind: fc.constant('block' as const),
      lines: fc.array(
        fc.constantFrom('text', `image: x:1 # {"$imagepolicy": "ns:p0"}`, '  indented', '# not a comment'),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    fc.constant<AliasNode>({ kind: 'alias' }),
    tie('map'),
  ),
  map: fc.record({
    kind: fc.constant('map' as const),
    entries: fc.array(
      fc.record({
        key: fc.constantFrom('a', 'b', 'image', 'tag', 'name'),
        value: tie('node'),
        blankBefore: fc.boolean(),
        commentBefore: fc.boolean(),
      }),
      {
        minLength: 1,
        maxLength: 4,
      },
    ),
  }),
}));

interface Rendered {
  lines: string[];
  js: (newValues: Map<ScalarNode, string>) => unknown;
}

function quote(value: string, style: Style, inFlow: boolean): string {
  if (style === 'single') return `'${value.replace(/'/g, "''")}'`;
  if (style === 'double' || !plainIsSafe(value, inFlow)) return JSON.stringify(value);
  return value;
}

function markerComment(s: ScalarNode, spaces: string): string {
  return s.marker ? `${spaces}# {"$imagepolicy": "ns:p${s.marker.policy}${s.marker.field}"}` : '';
}

/** Renders a node that follows `key:` (or `- `) at `indent`; returns the text after the indicator and any following lines. */
function render(
  node: Node,
  indent: number,
  ctx: { anchors: ScalarNode[]; n: number },
): { inline: string; more: string[]; js: Rendered['js'] } {
  const pad = ' '.repeat(Math.max(0, indent));
  const inner = ' '.repeat(indent + 2);
  switch (node.kind) {
    case 'scalar': {
      let anchor = '';
      if (node.anchor) {
        anchor = `&a${ctx.anchors.length} `;
        ctx.anchors.push(node);
      }
      const text = `${anchor}${quote(node.value, node.style, false)}${markerComment(node, ' '.repeat(1 + (ctx.n++ % 3)))}`;
      return { inline: ` ${text}`, more: [], js: (nv) => nv.get(node) ?? node.value };
    }
    case 'alias': {
      const target = ctx.anchors.length > 0 ? ctx.anchors[ctx.anchors.length - 1]! : null;
      if (!target) return { inline: ' ~', more: [], js: () => null };
      return { inline: ` *a${ctx.anchors.length - 1}`, more: [], js: (nv) => nv.get(target) ?? target.value };
    }
    case 'block': {
      // The first line sets the block's indentation; keep it unindented.
      const lines = ['text', ...node.lines];
      return { inline: ' |', more: lines.map((l) => `${pad}  ${l}`), js: () => lines.join('\n') + '\n' };
    }
    case 'seq': {
      if (node.flow) {
        // Flow items cannot carry a line comment except before a line break; put each on its own line.
        const more = node.items.map(
          (s, i) =>
            `${pad}  ${quote(s.value, s.style, true)}${i < node.items.length - 1 ? ',' : ''}${markerComment(s, ' ')}`,
        );
        return {
          inline: ' [',
          more: [...more, `${pad} ]`],
          js: (nv) => node.items.map((s) => nv.get(s) ?? s.value),
        };
      }
      const more = node.items.map(
        (s) => `${pad}- ${quote(s.value, s.style, false)}${markerComment(s, '  ')}`,
      );
      return { inline: '', more, js: (nv) => node.items.map((s) => nv.get(s) ?? s.value) };
    }
    case 'map': {
      const more: string[] = [];
      const parts: [string, Rendered['js']][] = [];
      const seen = new Set<string>();
      for (const e of node.entries) {
        if (seen.has(e.key)) continue;
        seen.add(e.key);
        if (e.blankBefore) more.push('');
        if (e.commentBefore) more.push(`${inner}# a comment with "$imagepolicy" in it`);
        const r = render(e.value, indent + 2, ctx);
        more.push(`${inner}${e.key}:${r.inline}`, ...r.more);
        parts.push([e.key, r.js]);
      }
      return { inline: '', more, js: (nv) => Object.fromEntries(parts.map(([k, f]) => [k, f(nv)])) };
    }
  }
}

function collectMarked(node: Node, out: ScalarNode[]): void {
  if (node.kind === 'scalar') {
    if (node.marker) out.push(node);
  } else if (node.kind === 'seq') {
    for (const s of node.items) if (s.marker) out.push(s);
  } else if (node.kind === 'map') {
    const seen = new Set<string>();
    for (const e of node.entries) {
      if (seen.has(e.key)) continue;
      seen.add(e.key);
      collectMarked(e.value, out);
    }
  }
}

const fileArb = fc.record({
  docs: fc.array(
    nodeArb.filter((n): n is MapNode => n.kind === 'map'),
    { minLength: 1, maxLength: 3 },
  ),
  crlf: fc.boolean(),
  bom: fc.boolean(),
  startMarker: fc.boolean(),
  endMarkers: fc.boolean(),
  images: fc.array(
    fc.option(
      fc.record({
        name: fc.constantFrom(...names),
        tag: fc.constantFrom(...tags),
        digest: fc.option(fc.constantFrom('sha256:111', 'sha256:222'), { nil: undefined }),
      }),
      { nil: null },
    ),
    { minLength: POLICIES + 1, maxLength: POLICIES + 1 },
  ),
});

test('rewrites change only marked scalars and parse to the intended values', () => {
  fc.assert(
    fc.property(fileArb, ({ docs, crlf, bom, startMarker, endMarkers, images }) => {
      const ctx = { anchors: [] as ScalarNode[], n: 0 };
      const lines: string[] = ['# generated'];
      const jsOf: Rendered['js'][] = [];
      const marked: ScalarNode[] = [];
      docs.forEach((doc, i) => {
        if (i > 0 || startMarker) lines.push('---');
        ctx.anchors = [];
        const r = render(doc, -2, ctx);
        lines.push(...r.more);
        if (endMarkers) lines.push('...');
        jsOf.push(r.js);
        collectMarked(doc, marked);
      });
      const eol = crlf ? '\r\n' : '\n';
      const text = (bom ? '\uFEFF' : '') + lines.join(eol) + eol;

      const found = findMarkers(text, 'gen.yaml');
      assert.equal(found.error, null, text);
      assert.equal(found.markers.length, marked.length, `markers found in:\n${text}`);

      const imageMap = new Map<string, ImageValue>();
      images.forEach((img, i) => {
        if (img)
          imageMap.set(
            `ns:p${i}`,
            img.digest
              ? { name: img.name, tag: img.tag, digest: img.digest }
              : { name: img.name, tag: img.tag },
          );
      });
      const edits = planEdits(found.markers, imageMap);
      const out = rewrite(text, edits);

      // Intended values: marker i (document order) is model scalar i.
      const newValues = new Map<ScalarNode, string>();
      found.markers.forEach((m, i) => {
        const img = imageMap.get(`${m.policy.namespace}:${m.policy.name}`);
        if (img) newValues.set(marked[i]!, valueFor(m, img));
      });
      const parsed = parseAllDocuments(out.startsWith('\uFEFF') ? out.slice(1) : out);
      for (const d of parsed) assert.deepEqual('errors' in d ? d.errors : [], [], out);
      assert.deepEqual(
        parsed.map((d) => d.toJS()),
        jsOf.map((f) => f(newValues)),
        out,
      );

      // Only the marked scalars' bytes changed.
      const after = findMarkers(out, 'gen.yaml');
      assert.equal(after.markers.length, found.markers.length);
      let pa = 0;
      let pb = 0;
      for (let i = 0; i <= found.markers.length; i++) {
        const a = found.markers[i];
        const b = after.markers[i];
        assert.equal(out.slice(pb, b ? b.start : out.length), text.slice(pa, a ? a.start : text.length));
        if (a && b) {
          pa = a.end;
          pb = b.end;
          if (!edits.some((e) => e.marker === a))
            assert.equal(out.slice(b.start, b.end), text.slice(a.start, a.end));
        }
      }
    }),
    { numRuns: 400, seed: 402 },
  );
});
