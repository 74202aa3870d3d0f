import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { table } from '../table.js';
import { statusLine } from '../terminal.js';
import { configJson, loadCommandConfig, resolveNamed } from '../config.js';
import type { ImageRepository } from '../../config/index.js';
import { openCommandStore } from '../store.js';
import { scanRepositories, type ScanReport, createScanClients, anomalyKinds } from '../../scan/index.js';
import { UsageError } from '../../util/index.js';

interface ScanOptions {
  concurrency?: string;
}

export function register(program: Command): void {
  const cmd = withGlobalOptions(
    program
      .command('scan')
      .argument('[names...]', 'ImageRepositories (NAMESPACE/NAME or a unique NAME); all when none')
      .description('scan ImageRepositories now and store what the registries listed')
      .option('--concurrency <n>', 'repositories scanned at once (default 4)'),
  );
  cmd.action(
    action(async (ctx, names: string[]) => {
      const opts = cmd.opts<ScanOptions>();
      const concurrency = opts.concurrency === undefined ? 4 : Number(opts.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1) {
        throw new UsageError(`--concurrency must be a positive whole number, not "${opts.concurrency}"`);
      }
      const loaded = await loadCommandConfig(ctx);
      const { config } = loaded;
      const repos: ImageRepository[] =
        names.length > 0
          ? [
              ...new Set(
                names.map((n) => resolveNamed(loaded, config.imageRepositories, n, 'ImageRepository')),
              ),
            ]
          : [...config.imageRepositories.values()].sort(
              (a, b) =>
                a.metadata.namespace.localeCompare(b.metadata.namespace) ||
                a.metadata.name.localeCompare(b.metadata.name),
            );
      if (repos.length === 0) {
        if (ctx.options.json) writeJson(ctx, { repositories: [], ...configJson(loaded) });
        else ctx.stderr.write('pawl: no ImageRepository in the configuration; nothing to scan\n');
        return loaded.exitFloor;
      }
      const store = await openCommandStore(ctx);
      const clients = createScanClients(config, { log: ctx.log, buildTimes: store.buildTimeCache() });
      const progress = progressIndicator(ctx, repos.length);
      const abort = new AbortController();
      const onSignal = () => abort.abort(new Error('interrupted'));
      process.once('SIGINT', onSignal);
      let reports: ScanReport[];
      try {
        reports = await scanRepositories(
          repos,
          {
            client: (r) => clients.client(r),
            reference: (r) => clients.reference(r),
            store,
            log: ctx.log,
            signal: abort.signal,
          },
          { concurrency, onDone: progress.update },
        );
      } finally {
        process.off('SIGINT', onSignal);
        progress.done();
        await store.close();
      }
      if (ctx.options.json) writeJson(ctx, { repositories: reports, ...configJson(loaded) });
      else writeLine(ctx, renderReports(reports));
      return reports.some((r) => r.error !== null) ? 1 : loaded.exitFloor;
    }),
  );
}

export function renderReports(reports: readonly ScanReport[]): string {
  return table(
    ['NAME', 'TAGS', 'ADDED', 'REMOVED', 'ANOMALIES', 'ERROR'],
    reports.map((r) => [
      r.name,
      String(r.tags),
      r.scanned ? String(r.added.length) : '-',
      r.scanned ? String(r.removed.length) : '-',
      r.suspended ? 'suspended' : anomalyKinds(r.anomalies),
      r.error ?? '',
    ]),
  );
}

/** A one-line counter on stderr, only for a person at a terminal (never with --json). */
export function progressIndicator(
  ctx: CommandContext,
  total: number,
  verb = 'scanning',
): { update: (r: ScanReport, done: number) => void; done: () => void } {
  const line = statusLine(ctx);
  line.show(`${verb} 0/${total}…`);
  return {
    update: (r, done) => line.show(`${verb} ${done}/${total}… ${r.name}${r.error ? ' (failed)' : ''}`),
    done: () => line.done(),
  };
}
