/** Leaf helpers every layer may use: errors that reach the user, and the logger. */
export * from './errors.js';
export * from './log.js';
export * from './redact.js';
export * from './pool.js';
export * from './process.js';
export * from './heap.js';
export * from './cron.js';
export * from './command.js';
export * from './code-cache-hook.js';
export * from './hash.js';
export * from './strings.js';
export * from './small-map.js';
export * from './sorted-table.js';
