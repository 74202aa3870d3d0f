/** Image references with Docker's rules: a leaf every layer may import (docs/architecture.md). */
export * from './reference.js';
export * from './providers.js';
