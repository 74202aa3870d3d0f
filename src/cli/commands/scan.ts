import type { Command } from 'commander';

/** Placeholder until the command is built. */
export function register(_program: Command): void {}
