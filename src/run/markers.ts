/**
 * Setter markers that point nowhere (issue 23, item 5): a comment that holds the marker token but
 * is not the JSON Flux reads, a setter name without a namespace or with a bad suffix, a policy
 * that does not exist, or one that no automation applies. Flux ignores all of them without a
 * word, and so did pawl; these are the first-day mistakes. Reads only the files the setters
 * scan (those containing the marker token), so `validate` stays cheap.
 */
import { stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  closest,
  levenshtein,
  selectPolicies,
  type Config,
  type ImageUpdateAutomation,
} from '../config/index.js';
import {
  MARKER_TOKEN,
  parseSetterName,
  scanTree,
  setterFromComment,
  type ScannedFile,
} from '../write/index.js';
import type { Problem } from '../util/index.js';

/** A marker mistake: `file` as `ScannedFile.file` (relative to the work tree root). */
export interface MarkerMistake {
  file: string;
  line: number;
  message: string;
}

const SUFFIXES = ['tag', 'name', 'digest'];

/**
 * What each loaded configuration's passes ask of it again and again, made once: a daemon's
 * every pass asked which policies some automation applies, G automations × N policies, so a
 * round of G passes did G² × N (issue 27: 1.3 s of a 10,000-image round with 10 automations).
 * A configuration is never changed once loaded; a reload makes a new one.
 */
const known = new WeakMap<Config, { defined: ReadonlySet<string>; applied: ReadonlySet<string> }>();

function knownPolicies(config: Config): { defined: ReadonlySet<string>; applied: ReadonlySet<string> } {
  let k = known.get(config);
  if (k === undefined) {
    const applied = new Set<string>();
    for (const a of config.automations.values())
      for (const p of selectPolicies(config, a)) applied.add(`${p.metadata.namespace}/${p.metadata.name}`);
    k = { defined: new Set(config.imagePolicies.keys()), applied };
    known.set(config, k);
  }
  return k;
}

/** `ns/name` of every ImagePolicy that some automation of `config` applies. */
export function appliedPolicies(config: Config): ReadonlySet<string> {
  return knownPolicies(config).applied;
}

/** `ns/name` of every ImagePolicy `config` defines. */
export function definedPolicies(config: Config): ReadonlySet<string> {
  return knownPolicies(config).defined;
}

/**
 * The marker mistakes in files an automation scanned. `policies` is every ImagePolicy defined
 * (valid or not: an invalid one has its own error), `applied` those some automation applies.
 */
export function markerMistakes(
  files: readonly ScannedFile[],
  automation: ImageUpdateAutomation,
  policies: ReadonlySet<string>,
  applied: ReadonlySet<string>,
): MarkerMistake[] {
  const out: MarkerMistake[] = [];
  const ns = automation.metadata.namespace;
  for (const f of files) {
    const kept = mistakesOf.get(f);
    if (kept !== undefined && kept.ns === ns && kept.policies === policies && kept.applied === applied) {
      out.push(...kept.found);
      continue;
    }
    const found = fileMistakes(f, ns, policies, applied);
    // Nearly every file has none: one empty list for all of them.
    mistakesOf.set(f, { ns, policies, applied, found: found.length === 0 ? NO_MISTAKES : found });
    out.push(...found);
  }
  return out;
}

/**
 * A file's mistakes, by the file: a daemon's kept scan (write/setters/tree.ts) hands the same
 * file objects, of the same text, to pass after pass, and what is wrong in them changes only
 * with the namespace asking or the configuration's policies (sets made once a configuration).
 */
const mistakesOf = new WeakMap<
  ScannedFile,
  { ns: string; policies: ReadonlySet<string>; applied: ReadonlySet<string>; found: readonly MarkerMistake[] }
>();
const NO_MISTAKES: readonly MarkerMistake[] = Object.freeze([]);

function fileMistakes(
  f: ScannedFile,
  ns: string,
  policies: ReadonlySet<string>,
  applied: ReadonlySet<string>,
): MarkerMistake[] {
  const out: MarkerMistake[] = [];
  // From one token to the next, the lines between counted rather than split out.
  const text = f.text;
  let line = 1;
  let counted = 0;
  for (let at = text.indexOf(MARKER_TOKEN); at >= 0;) {
    const start = text.lastIndexOf('\n', at) + 1;
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    for (let nl = text.indexOf('\n', counted); nl >= 0 && nl < start; nl = text.indexOf('\n', nl + 1)) line++;
    counted = start;
    const lineText = text.slice(start, end);
    const hash = commentStart(lineText, at - start);
    if (hash >= 0) {
      const message = mistake(lineText.slice(hash + 1).trimEnd(), ns, policies, applied);
      if (message) out.push(Object.freeze({ file: f.file, line, message }));
    }
    at = text.indexOf(MARKER_TOKEN, end);
  }
  return out;
}

/** Where the comment holding the token at `t` starts: the first `#` at the line's start or after a blank. */
function commentStart(line: string, t: number): number {
  for (let i = line.indexOf('#'); i >= 0 && i < t; i = line.indexOf('#', i + 1))
    if (i === 0 || line[i - 1] === ' ' || line[i - 1] === '\t') return i;
  return -1;
}

function mistake(
  comment: string,
  ns: string,
  policies: ReadonlySet<string>,
  applied: ReadonlySet<string>,
): string | undefined {
  const setter = setterFromComment(comment);
  if (setter === null) {
    return `this marker is not the JSON Flux reads, so no value is ever set here: write # {"$imagepolicy": "NAMESPACE:POLICY"} (or with :tag, :name or :digest), double quotes and all`;
  }
  const parsed = parseSetterName(setter);
  if (!parsed) {
    const parts = setter.split(':');
    if (parts.length === 1) {
      const named = [...policies].filter((p) => p.endsWith(`/${setter}`));
      const guess = named.length > 0 ? named.map((p) => p.replace('/', ':')) : [`${ns}:${setter}`];
      return `marker "${setter}" has no namespace; Flux reads NAMESPACE:POLICY: did you mean "${guess.join('" or "')}"?`;
    }
    if (parts.length === 3 && parts[0] && parts[1]) {
      // Three letters leave `closest` one edit; a swapped pair (:tga) is two.
      const near = SUFFIXES.filter((x) => levenshtein(x, parts[2]!.toLowerCase()) <= 2).slice(0, 1);
      return `marker "${setter}": ":${parts[2]}" is not one of :tag, :name, :digest${near.length ? `; did you mean "${parts[0]}:${parts[1]}:${near[0]}"?` : ''}`;
    }
    return `marker "${setter}" is not NAMESPACE:POLICY or NAMESPACE:POLICY:tag|name|digest; no value is set here`;
  }
  const key = `${parsed.policy.namespace}/${parsed.policy.name}`;
  if (!policies.has(key)) {
    const near = closest(key, policies, 3);
    return `marker names ImagePolicy ${key}, which does not exist${near.length ? `; did you mean ${near.join(', ')}?` : ''}`;
  }
  if (!applied.has(key)) {
    return parsed.policy.namespace !== ns
      ? `marker names ImagePolicy ${key}, but an automation applies only ImagePolicies of its own namespace (this one's is ${ns}) and none of namespace ${parsed.policy.namespace} applies it: no value is set here`
      : `marker names ImagePolicy ${key}, which no automation's policySelector selects: no value is set here`;
  }
  return undefined;
}

async function gitRoot(start: string): Promise<string | undefined> {
  for (let dir = start; ; dir = dirname(dir)) {
    if (
      await stat(join(dir, '.git')).then(
        () => true,
        () => false,
      )
    )
      return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * `pawl validate`'s marker check: each automation's `update.path`, read in the Git work tree its
 * own file is in (where the `-c` files are checked out). Problems name the file as `toPath`
 * words it and the marker's line; automations whose path is not there are left alone.
 */
export async function markerProblems(
  config: Config,
  definedPolicies: Iterable<string>,
  toPath: (absolute: string) => string = (p) => p,
): Promise<Problem[]> {
  const policies = new Set(definedPolicies);
  const applied = appliedPolicies(config);
  const seen = new Set<string>();
  const problems: Problem[] = [];
  for (const a of config.automations.values()) {
    const root = await gitRoot(dirname(a.source.file));
    if (!root) continue;
    const scan = await scanTree(root, a.spec.update.path || '.').catch(() => undefined);
    if (!scan) continue;
    for (const m of markerMistakes(scan.files, a, policies, applied)) {
      const file = toPath(join(root, m.file));
      const key = `${file}:${m.line}`;
      if (seen.has(key)) continue;
      seen.add(key);
      problems.push({ location: { file, line: m.line }, severity: 'warning', message: m.message });
    }
  }
  return problems;
}

/**
 * Markers naming `policy` (`ns/name`) in the Git work tree of the policy's own file that no
 * automation's `update.path` holds: `pawl explain` lists them, since no automation updates them.
 */
export async function markersOutsideAutomations(
  config: Config,
  policy: string,
): Promise<{ file: string; line: number; setter: string }[]> {
  const p = config.imagePolicies.get(policy);
  if (!p) return [];
  const root = await gitRoot(dirname(p.source.file));
  if (!root) return [];
  const scan = await scanTree(root, '.').catch(() => undefined);
  if (!scan) return [];
  const paths = [...config.automations.values()].map((a) =>
    (a.spec.update.path || '.').replace(/^\.\/?/, '').replace(/\/+$/, ''),
  );
  const held = (file: string): boolean =>
    paths.some((u) => u === '' || file === u || file.startsWith(`${u}/`));
  const out: { file: string; line: number; setter: string }[] = [];
  for (const f of scan.files) {
    if (held(f.file)) continue;
    for (const m of f.markers)
      if (`${m.policy.namespace}/${m.policy.name}` === policy)
        out.push({ file: join(root, m.file), line: m.line, setter: m.setter });
  }
  return out;
}
