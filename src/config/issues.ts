import type { z } from 'zod';
import { closest } from './suggest.js';

/** `spec.filterTags.pattern`, `spec.exclusionList[1]`, `data[".dockerconfigjson"]`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(String(seg))) out += (out ? '.' : '') + String(seg);
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  // By index: a one-shot command runs without the optimizing compiler, and `for…of` then makes an
  // iterator and a result object a step (~2.6 MB of a 500-image configuration's load, issue 27).
  for (let i = 0; i < path.length; i++) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[path[i]!];
  }
  return v;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  switch (typeof v) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'a mapping';
    default:
      return typeof v;
  }
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
  record: 'a mapping',
};

/**
 * One zod issue as a sentence about the user's field. Never quotes the input value:
 * it may be a Secret's.
 */
export function issueMessage(issue: z.core.$ZodIssue, root: unknown): string {
  const where = fieldPath(issue.path);
  // "spec.x is …", "spec.x must …" read as sentences; anything else after a colon.
  const sentence = issue.code === 'custom' && /^(is|must|needs|has) /.test(issue.message);
  const prefix = where ? (sentence || issue.code === 'too_small' ? `${where} ` : `${where}: `) : '';
  const actual = valueAt(root, issue.path);
  switch (issue.code) {
    case 'invalid_type': {
      if (actual === undefined) return `${where || 'value'} is required`;
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      const hint =
        issue.expected === 'string' && (typeof actual === 'number' || typeof actual === 'boolean')
          ? ' (quote it)'
          : '';
      return `${prefix}expected ${expected}, got ${describe(actual)}${hint}`;
    }
    case 'too_small':
      if (issue.origin === 'string') return `${prefix}must not be empty`;
      if (issue.origin === 'array') return `${prefix}needs at least ${String(issue.minimum)} item(s)`;
      return `${prefix}must be at least ${String(issue.minimum)}`;
    case 'too_big':
      return `${prefix}must be at most ${String(issue.maximum)}`;
    case 'invalid_value':
      return `${prefix}must be ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}`;
    case 'not_multiple_of':
      return `${prefix}must be a multiple of ${String(issue.divisor)}`;
    default:
      return `${prefix}${issue.message}`;
  }
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
}

export interface FieldWarning {
  path: PropertyKey[];
  message: string;
}

/** What the walk below needs of a schema node, wrappers (optional, default, pipe…) looked through. */
interface Resolved {
  /** The first `pawlIgnored` note on the way down. */
  ignored: string | undefined;
  shape: Record<string, z.ZodType> | undefined;
  element: z.ZodType | undefined;
}

/**
 * Per schema node, once: `meta()` reads zod's global registry and copies the entry, which, for
 * every field of a thousand objects, was most of the walk's time.
 */
const resolvedNodes = new WeakMap<z.ZodType, Resolved>();

function resolveNode(s: z.ZodType): Resolved {
  let r = resolvedNodes.get(s);
  if (r) return r;
  let ignored: string | undefined;
  let cur = s;
  for (;;) {
    const meta = cur.meta() as { pawlIgnored?: string } | undefined;
    ignored ??= meta?.pawlIgnored || undefined;
    const def = cur._zod.def as unknown as Def;
    if (def.innerType) cur = def.innerType;
    else if (def.type === 'pipe' && def.in) cur = def.in;
    else {
      r = {
        ignored,
        shape: def.type === 'object' ? def.shape : undefined,
        element: def.type === 'array' ? def.element : undefined,
      };
      break;
    }
  }
  resolvedNodes.set(s, r);
  return r;
}

/**
 * Fields the schema does not know (a typo must not pass in silence) and fields pawl accepts
 * but ignores. Walks the raw value alongside the schema; zod itself strips unknown keys.
 */
export function fieldWarnings(schema: z.ZodType, value: unknown, kind: string): FieldWarning[] {
  const out: FieldWarning[] = [];
  // One path, extended and shortened as the walk goes, copied only into a warning: a copy for
  // every field of every object was ~2.5 MB of a 500-image configuration's load (issue 27).
  const path: PropertyKey[] = [];
  const walk = (s: z.ZodType, v: unknown): void => {
    if (v === undefined) return;
    const node = resolveNode(s);
    if (node.ignored) {
      out.push({ path: [...path], message: `${fieldPath(path)} is ignored: ${node.ignored}` });
      return;
    }
    const { shape, element } = node;
    if (shape && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        const child = (v as Record<string, unknown>)[key];
        const sub = Object.hasOwn(shape, key) ? shape[key] : undefined;
        path.push(key);
        if (sub) walk(sub, child);
        else {
          const near = closest(
            key,
            Object.keys(shape).filter((k) => k !== 'status'),
            1,
          );
          const hint = near.length ? `; did you mean ${near[0]}?` : '';
          out.push({
            path: [...path],
            message: `unknown field ${fieldPath(path)} in ${kind} (ignored)${hint}`,
          });
        }
        path.pop();
      }
      return;
    }
    if (element && Array.isArray(v))
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        walk(element, v[i]);
        path.pop();
      }
  };
  walk(schema, value);
  return out;
}
