/**
 * The records every layer shares (docs/architecture.md, "Shared records"): what a scan observed,
 * a marker's decision, a stored event, and the run and scan reports. Only types: the layers
 * that make and read them sit above, so none of them has to import another to name one.
 */
export type * from './scan.js';
export type * from './decision.js';
export type * from './event.js';
export type * from './report.js';
