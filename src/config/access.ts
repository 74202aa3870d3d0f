/**
 * Flux's rule for references across namespaces (fluxcd/pkg runtime/acl, used by
 * image-reflector-controller for ImagePolicy → ImageRepository): the same namespace is always
 * allowed; another namespace only when the repository's `spec.accessFrom.namespaceSelectors`
 * has a selector whose `matchLabels` all hold for the labels of the policy's namespace. No
 * `accessFrom` denies; an empty selector (`{}` or `matchLabels: {}`) matches every namespace, as
 * Kubernetes' empty label selector does; an empty list of selectors denies.
 *
 * In a cluster the namespace's labels come from the API server. pawl takes them from a `v1`
 * Namespace object in the configuration, plus `kubernetes.io/metadata.name`, which Kubernetes
 * sets on every namespace; a namespace without such an object has only that label.
 */
import { NAMESPACE_NAME_LABEL } from './schema/namespace.js';
import type { AccessFrom, Config, NamespaceInfo } from './types.js';

/** The labels a namespace has as far as pawl can know, and where they come from. */
export function namespaceLabels(
  config: Config,
  namespace: string,
): { labels: Record<string, string>; from?: NamespaceInfo } {
  const ns = config.namespaces.get(namespace);
  return ns ? { labels: ns.labels, from: ns } : { labels: { [NAMESPACE_NAME_LABEL]: namespace } };
}

function matches(labels: Record<string, string>, matchLabels: Record<string, string>): boolean {
  return Object.entries(matchLabels).every(([k, v]) => labels[k] === v);
}

function showLabels(labels: Record<string, string>): string {
  return `{${Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ')}}`;
}

/**
 * Why an object in `fromNamespace` may not refer to `target` (`Kind ns/name`) guarded by
 * `accessFrom`; undefined when it may.
 */
export function accessDenied(
  config: Config,
  fromNamespace: string,
  target: { label: string; namespace: string; accessFrom: AccessFrom | undefined },
): string | undefined {
  if (target.namespace === fromNamespace) return undefined;
  const rule = "Flux's cross-namespace rule";
  if (!target.accessFrom) {
    return (
      `${target.label} is in another namespace and has no spec.accessFrom, so ${rule} refuses the reference; ` +
      `add accessFrom.namespaceSelectors to it matching namespace ${fromNamespace}, or move the policy to ${target.namespace}`
    );
  }
  const { labels, from } = namespaceLabels(config, fromNamespace);
  if (target.accessFrom.namespaceSelectors.some((s) => matches(labels, s.matchLabels))) return undefined;
  const where = from
    ? `Namespace ${fromNamespace} at ${from.source.file}:${from.source.line}`
    : `no Namespace ${fromNamespace} object in the configuration, so only the label Kubernetes sets itself`;
  return (
    `${target.label} does not allow access from namespace ${fromNamespace} (${rule}): no ` +
    `accessFrom.namespaceSelectors entry matches its labels ${showLabels(labels)} (${where})`
  );
}
