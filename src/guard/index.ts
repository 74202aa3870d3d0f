export { decideMarker, candidateValue, type DecideInput } from './decide.js';
export {
  ratchetStep,
  runRatchet,
  policySpecHash,
  toStored,
  fromStored,
  type RatchetState,
  type RatchetInput,
  type RatchetResult,
  type StoredRatchetState,
} from './ratchet.js';
export {
  pinFor,
  pinStatus,
  policyOfSetter,
  releasesPolicy,
  type PinInput,
  type PinState,
  type PinStatus,
} from './pins.js';
export { decisionEvent, withPolicy, toStoreEvent, type MarkerContext } from './events.js';
export {
  REASON_LABELS,
  reasonMeaning,
  explainDecision,
  adviceFor,
  explainPin,
  explainRatchet,
  explainEvent,
  type ExplainContext,
} from './explain.js';
export { parseMarkerValue, canonicalImageName, sameImageName, type MarkerValue } from './values.js';
export * from './trailers.js';
export type * from './types.js';
export { windowGate, windowState, oldEnoughAt, when, type Gate, type WindowState } from './gates.js';
