import type { Location, Problem } from '../util/index.js';
import { referencesOf, type Loaded } from './check.js';
import { valueAt } from './issues.js';
import { matchesSelector } from './resolve.js';
import { CONFIG_MAPS, type Config, type Kind, type LabelSelector } from './types.js';

/**
 * An object pawl will not act on in this run, and why. Flux stalls only the object that is
 * wrong; pawl does the same and also leaves alone whatever needs it, so that nothing runs
 * with half of what it was configured with.
 */
export interface SkippedObject {
  kind: Kind;
  namespace: string;
  name: string;
  /** Where the object is defined. */
  location: Location;
  /**
   * `invalid`: the object has errors of its own (they are among the problems);
   * `dependency`: it needs an object that is skipped (`dependsOn`).
   */
  reason: 'invalid' | 'dependency';
  /** `Kind namespace/name` of the skipped object this one needs; null when invalid itself. */
  dependsOn: string | null;
  /** One sentence for people. */
  message: string;
}

export const objectLabel = (kind: string, namespace: string, name: string): string =>
  `${kind} ${namespace}/${name}`;

/**
 * The problems to show for objects that are fine themselves but would not run, because what they
 * need is invalid (those have problems of their own already): one line each, where they are.
 */
export function dependencyProblems(skipped: readonly SkippedObject[]): Problem[] {
  return skipped
    .filter((s) => s.reason === 'dependency')
    .map((s) => ({
      location: s.location,
      object: objectLabel(s.kind, s.namespace, s.name),
      severity: 'error' as const,
      message: `skipped: needs ${s.dependsOn}`,
    }));
}

function rawLabels(raw: unknown): Record<string, string> | undefined {
  const labels = valueAt(raw, ['metadata', 'labels']);
  if (labels === undefined) return {};
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    if (typeof v !== 'string') return undefined;
    out[k] = v;
  }
  return out;
}

/**
 * What each object needs: the objects it names, and for an automation the policies it applies.
 * An invalid policy whose labels cannot be read is taken to be selected: an automation must
 * not run without a policy it may have been meant to apply.
 */
function dependencies(l: Loaded, loaded: readonly Loaded[]): string[] {
  const deps = referencesOf(l, () => undefined).map((r) => objectLabel(r.kind, r.namespace, r.name));
  if (l.obj?.kind === 'ImageUpdateAutomation') {
    const selector: LabelSelector | undefined = l.obj.spec.policySelector;
    for (const p of loaded) {
      if (p.kind !== 'ImagePolicy' || p.namespace !== l.namespace) continue;
      const labels = p.obj?.metadata.labels ?? rawLabels(p.raw);
      if (selector && labels !== undefined && !matchesSelector(labels, selector)) continue;
      deps.push(objectLabel(p.kind, p.namespace, p.name));
    }
  }
  return deps;
}

/**
 * Decides which objects are skipped — those with an error of their own, and, transitively,
 * those that need one of them — and removes them from `config`. Returns them in the order
 * they were read.
 */
export function skipInvalid(
  config: Config,
  loaded: readonly Loaded[],
  problems: readonly Problem[],
): SkippedObject[] {
  const firstError = new Map<string, Problem>();
  for (const p of problems) {
    if (p.severity === 'error' && p.object !== undefined && !firstError.has(p.object))
      firstError.set(p.object, p);
  }
  const skipped = new Map<string, SkippedObject>();
  const locationOf = (l: Loaded): Location => ({ file: l.doc.file, line: l.doc.line });
  for (const l of loaded) {
    const label = objectLabel(l.kind, l.namespace, l.name);
    const err = firstError.get(label);
    if (err === undefined || skipped.has(label)) continue;
    skipped.set(label, {
      kind: l.kind,
      namespace: l.namespace,
      name: l.name,
      location: locationOf(l),
      reason: 'invalid',
      dependsOn: null,
      message: `${label} is invalid (${err.location.file}${err.location.line ? `:${err.location.line}` : ''}: ${err.message})`,
    });
  }
  const deps = new Map(loaded.map((l) => [l, dependencies(l, loaded)]));
  // Dependencies are few and shallow (automation → policy → repository → secret): repeat
  // until nothing changes rather than building a reverse index.
  for (let changed = true; changed;) {
    changed = false;
    for (const l of loaded) {
      const label = objectLabel(l.kind, l.namespace, l.name);
      if (skipped.has(label)) continue;
      const bad = deps.get(l)!.find((d) => skipped.has(d));
      if (bad === undefined) continue;
      const why = skipped.get(bad)!;
      skipped.set(label, {
        kind: l.kind,
        namespace: l.namespace,
        name: l.name,
        location: locationOf(l),
        reason: 'dependency',
        dependsOn: bad,
        message: `${label} needs ${bad}, which is skipped (${why.reason === 'invalid' ? 'invalid' : `it needs ${why.dependsOn}`})`,
      });
      changed = true;
    }
  }
  for (const s of skipped.values()) config[CONFIG_MAPS[s.kind]].delete(`${s.namespace}/${s.name}`);
  return [...skipped.values()];
}
