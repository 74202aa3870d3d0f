/**
 * Alerts (issue 14, SPEC §6): events worth a person's attention, routed by Flux's Alert
 * objects to Flux's Provider objects, in Flux's event JSON. Only serve/ and cli/ import this.
 *
 *   const notifier = new Notifier({ config, metrics, log });
 *   let memory = emptyMemory();
 *   // after each pass:
 *   const { events, memory: next } = eventsFrom(memory, { at, report, guardEvents, scans });
 *   memory = next;
 *   notifier.publish(events);
 *
 * A caller that keeps one memory and nothing else reads it folds into it in place:
 * `notifier.publish(foldEvents(memory, observation))`.
 */
export {
  EVENT_REASONS,
  fluxEvent,
  goJson,
  goTime,
  type EventObject,
  type EventObjectKind,
  type EventReason,
  type FluxEvent,
  type InvolvedObject,
  type AlertEvent,
  type Severity,
} from './event.js';
export {
  emptyMemory,
  eventsFrom,
  foldEvents,
  guardEventsFromRecords,
  scanAttempts,
  type AlertMemory,
  type FoldingMemory,
  type DeriveOptions,
  type PassObservation,
  type ScanAttempt,
} from './derive.js';
export { route, type Dispatch, type Reporting } from './route.js';
export { payloadFor, signature, type Payload, type Target } from './payload.js';
export { resolveTarget, type Resolved } from './targets.js';
export {
  Notifier,
  noMetrics,
  type NotifierOptions,
  type NotifyMetrics,
  type ProviderStats,
} from './notifier.js';
export { testProvider, type ProbeResult } from './probe.js';
export {
  httpTransport,
  type OutgoingRequest,
  type AlertSender,
  type TransportResponse,
} from './transport.js';
