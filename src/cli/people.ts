/**
 * What the people's commands (explain, rollback, release) share: the configuration loaded, the
 * named ImagePolicy found in it, the store opened and closed around the command.
 */
import type { ImagePolicy } from '../config/index.js';
import type { PeopleDeps } from '../run/index.js';
import { createScanClients } from '../scan/index.js';
import { loadCommandConfig, resolveNamed, type CommandConfig } from './config.js';
import type { CommandContext } from './context.js';
import { openCommandStore } from './store.js';

export async function withPeopleDeps<T>(
  ctx: CommandContext,
  policyName: string,
  body: (deps: PeopleDeps, policy: ImagePolicy, loaded: CommandConfig) => Promise<T>,
): Promise<T> {
  const loaded = await loadCommandConfig(ctx);
  const { config } = loaded;
  const policy = resolveNamed(loaded, config.imagePolicies, policyName, 'ImagePolicy');
  const store = await openCommandStore(ctx);
  try {
    const clients = createScanClients(config, { log: ctx.log, buildTimes: store.buildTimeCache() });
    return await body(
      { config, store, stateDir: ctx.options.stateDir, clients, log: ctx.log },
      policy,
      loaded,
    );
  } finally {
    await store.close();
  }
}
