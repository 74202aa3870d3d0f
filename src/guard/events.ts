/** Guard events: from decisions and ratchet steps to the store's event records. */
import type { StoredEvent } from '../records/index.js';
import type { GuardVerdict, GuardEvent, Pin } from './types.js';

export interface MarkerContext {
  policy: string;
  file: string;
  line: number;
  current: string;
  candidate: string | null;
}

/** The event a marker decision is worth recording, or null (upgrades, up-to-date lines…). */
export function decisionEvent(
  d: GuardVerdict,
  ctx: MarkerContext,
  pin: Pin | null = null,
): GuardEvent | null {
  const base = {
    policy: ctx.policy,
    file: ctx.file,
    line: ctx.line,
    current: ctx.current,
    candidate: ctx.candidate ?? '',
    detail: d.detail,
  };
  switch (d.reason) {
    case 'downgrade-blocked':
      return { kind: 'downgrade-blocked', ...base };
    case 'candidate-missing':
      return { kind: 'candidate-missing', ...base };
    case 'pinned':
      return pin ? { kind: 'pin', ...base, commit: pin.commit } : null;
    default:
      return null;
  }
}

/** Names the policy of ratchet events (which the pure step does not know). */
export function withPolicy(events: readonly GuardEvent[], policy: string): GuardEvent[] {
  return events.map((e) => ({ ...e, policy }));
}

/** The record the store keeps of an event (`StoredEvent`, src/records/event.ts). */
export function toStoreEvent(
  e: GuardEvent,
  at: Date,
  repository?: string,
): StoredEvent & { kind: GuardEvent['kind'] } {
  const { kind, policy, ...detail } = e;
  return {
    at,
    kind,
    ...(policy !== undefined ? { policy } : {}),
    ...(repository !== undefined ? { repository } : {}),
    detail,
  };
}
