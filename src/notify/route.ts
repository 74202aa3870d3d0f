/**
 * Which Alerts an event matches, and the event each one's Provider receives — Flux's
 * notification-controller rules (internal/server/event_handlers.go): suspended Alerts and
 * Providers send nothing; a source matches on namespace (default: the Alert's), kind, name or
 * `*`, and `matchLabels` against the object's labels; `eventSeverity: error` passes only
 * errors; `inclusionList`/`exclusionList` are RE2 patterns matched against the message.
 */
import type { Alert, AlertSource, Config, PawlObject } from '../config/index.js';
import { compileRegex } from '../go/index.js';
import { fluxEvent, type FluxEvent, type AlertEvent } from './event.js';

export interface Dispatch {
  /** `ns/name` of the Provider. */
  provider: string;
  /** `ns/name` of the Alert that matched. */
  alert: string;
  event: FluxEvent;
}

export interface Reporting {
  reportingController: string;
  reportingInstance?: string;
}

/** Flux's annotation prefix for metadata an object adds to every event about it. */
const EVENT_ANNOTATION_PREFIX = 'event.toolkit.fluxcd.io/';

function objectOf(config: Config, e: AlertEvent): PawlObject | undefined {
  const key = `${e.object.namespace}/${e.object.name}`;
  switch (e.object.kind) {
    case 'ImageRepository':
      return config.imageRepositories.get(key);
    case 'ImagePolicy':
      return config.imagePolicies.get(key);
    case 'ImageUpdateAutomation':
      return config.automations.get(key);
  }
}

function sourceMatches(
  source: AlertSource,
  alert: Alert,
  e: AlertEvent,
  object: PawlObject | undefined,
): boolean {
  const namespace = source.namespace ?? alert.metadata.namespace;
  if (e.object.namespace !== namespace || e.object.kind !== source.kind) return false;
  if (e.severity !== alert.spec.eventSeverity && alert.spec.eventSeverity !== 'info') return false;
  if (source.name !== '*' && source.name !== e.object.name) return false;
  if (source.matchLabels === undefined) return true;
  // Flux reads the object's labels from the cluster; pawl from its configuration.
  if (!object) return false;
  const labels = object.metadata.labels;
  return Object.entries(source.matchLabels).every(([k, v]) => labels[k] === v);
}

function messagePasses(alert: Alert, message: string): boolean {
  const { inclusionList, exclusionList } = alert.spec;
  if (inclusionList.length > 0 && !inclusionList.some((p) => compileRegex(p).test(message))) return false;
  return !exclusionList.some((p) => compileRegex(p).test(message));
}

/**
 * Flux's `combineEventMetadata`, in its order (later wins): the object's
 * `event.toolkit.fluxcd.io/` annotations, the Alert's `eventMetadata`, its `summary`, then the
 * emitter's own metadata.
 */
function combinedMetadata(
  alert: Alert,
  e: AlertEvent,
  object: PawlObject | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(object?.metadata.annotations ?? {})) {
    if (k.startsWith(EVENT_ANNOTATION_PREFIX)) out[k.slice(EVENT_ANNOTATION_PREFIX.length)] = v;
  }
  Object.assign(out, alert.spec.eventMetadata);
  if (alert.spec.summary) out.summary = alert.spec.summary;
  Object.assign(out, e.metadata);
  return out;
}

/** Every (Alert, Provider) the event goes to, with the event as that Provider receives it. */
export function route(config: Config, e: AlertEvent, reporting: Reporting): Dispatch[] {
  const object = objectOf(config, e);
  const out: Dispatch[] = [];
  const alerts = [...config.alerts.values()].sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}` ? -1 : 1,
  );
  for (const alert of alerts) {
    if (alert.spec.suspend) continue;
    if (!alert.spec.eventSources.some((s) => sourceMatches(s, alert, e, object))) continue;
    if (!messagePasses(alert, e.message)) continue;
    const provider = `${alert.metadata.namespace}/${alert.spec.providerRef}`;
    const p = config.providers.get(provider);
    if (!p || p.spec.suspend) continue;
    out.push({
      provider,
      alert: `${alert.metadata.namespace}/${alert.metadata.name}`,
      event: fluxEvent(e, {
        ...(object ? { apiVersion: object.apiVersion } : {}),
        metadata: combinedMetadata(alert, e, object),
        ...reporting,
      }),
    });
  }
  return out;
}
