import { UsageError } from '../util/index.js';
import { closest } from './suggest.js';
import type { Config, ImagePolicy, ImageUpdateAutomation, LabelSelector } from './types.js';

/**
 * Finds an object named on the command line: `namespace/name`, or a bare `name` when exactly
 * one namespace has it. Unknown or ambiguous names are a UsageError listing the close matches.
 */
export function resolveObject<T>(map: Map<string, T>, name: string, kind: string): T {
  const exact = map.get(name);
  if (exact !== undefined) return exact;
  if (!name.includes('/')) {
    const hits = [...map.keys()].filter((k) => k.slice(k.indexOf('/') + 1) === name);
    if (hits.length === 1) return map.get(hits[0]!)!;
    if (hits.length > 1) {
      throw new UsageError(`${kind} "${name}" is ambiguous: ${hits.sort().join(', ')}; write NAMESPACE/NAME`);
    }
  }
  const keys = [...map.keys()];
  const bare = name.includes('/') ? name : name;
  const near = [
    ...new Set([
      ...closest(bare, keys, 5),
      ...closest(
        bare,
        keys.map((k) => k.slice(k.indexOf('/') + 1)),
        5,
      ).flatMap((n) => keys.filter((k) => k.endsWith(`/${n}`))),
    ]),
  ].slice(0, 5);
  const hint = near.length
    ? `; did you mean ${near.join(', ')}?`
    : keys.length === 0
      ? `; there is no ${kind} in the configuration`
      : '';
  throw new UsageError(`no ${kind} named "${name}"${hint}`);
}

/** Kubernetes label selector semantics: every matchLabels pair and every expression must hold. */
export function matchesSelector(labels: Record<string, string>, selector: LabelSelector): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels)) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions) {
    const has = Object.hasOwn(labels, e.key);
    switch (e.operator) {
      case 'In':
        if (!has || !e.values.includes(labels[e.key]!)) return false;
        break;
      case 'NotIn':
        if (has && e.values.includes(labels[e.key]!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

/**
 * The ImagePolicies an automation applies, as Flux chooses them: those in the automation's
 * namespace matching `policySelector`; all of that namespace's policies when it is absent.
 * Sorted by name, for stable output.
 */
export function selectPolicies(config: Config, automation: ImageUpdateAutomation): ImagePolicy[] {
  const ns = automation.metadata.namespace;
  const selector = automation.spec.policySelector;
  const out: ImagePolicy[] = [];
  for (const p of config.imagePolicies.values()) {
    if (p.metadata.namespace !== ns) continue;
    if (selector && !matchesSelector(p.metadata.labels, selector)) continue;
    out.push(p);
  }
  return out.sort((a, b) =>
    a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0,
  );
}
