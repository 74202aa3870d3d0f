/**
 * `pawl notify test --provider NS/NAME`: sends one test event to a Provider and says whether it
 * was accepted (exit 0) or not (exit 1). See docs/alerts.md.
 */
import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine } from '../context.js';
import { action } from '../action.js';
import { loadConfigOrThrow } from '../../config/index.js';
import { testProvider } from '../../notify/index.js';
import { UsageError } from '../../util/index.js';

export function register(program: Command): void {
  const notify = program.command('notify').description('work with alert Providers');
  const testCmd = withGlobalOptions(
    notify
      .command('test')
      .description('send one test event to a Provider (no Alert needed); exit 1 when it is not accepted')
      .requiredOption(
        '--provider <ns/name>',
        'the Provider, NAMESPACE/NAME (namespace optional when unique)',
      ),
  );
  testCmd.action(
    action(async (ctx) => {
      const { config } = await loadConfigOrThrow(ctx.options.config, ctx.log);
      const wanted = testCmd.opts<{ provider: string }>().provider;
      const keys = [...config.providers.keys()];
      const key = wanted.includes('/') ? wanted : keys.filter((k) => k.endsWith(`/${wanted}`));
      const resolved = typeof key === 'string' ? key : key.length === 1 ? key[0]! : null;
      if (resolved === null || !config.providers.has(resolved)) {
        throw new UsageError(
          typeof key !== 'string' && key.length > 1
            ? `Provider ${wanted} is ambiguous: ${key.join(', ')}; name it NAMESPACE/NAME`
            : `Provider ${wanted} not found${keys.length ? `; known: ${keys.join(', ')}` : ''}`,
        );
      }
      const r = await testProvider(config, resolved);
      if (ctx.options.json) writeJson(ctx, { provider: resolved, ...r });
      else
        writeLine(
          ctx,
          r.ok ? `Provider ${resolved}: accepted (HTTP ${r.status})` : `Provider ${resolved}: ${r.error}`,
        );
      return r.ok ? 0 : 1;
    }),
  );
}
