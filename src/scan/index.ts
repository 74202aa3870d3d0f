/** Scanning: tag lists from registries, compared with the previous scan and stored. */
export * from './scanner.js';
export * from './clients.js';
export * from './format.js';
export * from './registry/index.js';
export * from './diff.js';
export * from './view.js';
export * from './verify.js';
