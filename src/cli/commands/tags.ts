import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { table } from '../table.js';
import { loadCommandConfig, resolveNamed } from '../config.js';
import { resolveObject, refKey } from '../../config/index.js';
import type { Store } from '../../store/index.js';
import { openCommandStore } from '../store.js';
import { anomalyKinds, changeList, formatResponse, formatTime, tagsView } from '../../scan/index.js';
import { RuntimeError, UsageError } from '../../util/index.js';

interface TagsOptions {
  history?: boolean;
  raw?: boolean;
  wide?: boolean;
  limit?: string;
}

/**
 * With `-c`, NAME is resolved among the configured ImageRepositories; without, among the
 * repositories the state has scans of, so the history stays readable with no config at hand.
 */
async function resolveRepository(ctx: CommandContext, store: Store, name: string): Promise<string> {
  if (ctx.options.config.length > 0) {
    const loaded = await loadCommandConfig(ctx);
    return refKey(resolveNamed(loaded, loaded.config.imageRepositories, name, 'ImageRepository').metadata);
  }
  const known = new Map((await store.knownRepositories()).map((k) => [k, k]));
  if (known.size === 0) {
    throw new RuntimeError(
      `no scans in ${store.location} yet; run "pawl scan" first (or pass -c to name a configured ImageRepository)`,
    );
  }
  return resolveObject(known, name, 'scanned ImageRepository');
}

function parseLimit(raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new UsageError(`--limit must be a positive whole number, not "${raw}"`);
  return Number(raw);
}

export function register(program: Command): void {
  const cmd = withGlobalOptions(
    program
      .command('tags')
      .argument('<name>', 'ImageRepository, NAMESPACE/NAME or a unique NAME')
      .description('the tags of the last good scan; --history: every scan; --raw: what the registry said')
      .option('--history', "each scan's time, outcome, count, tags added and removed, anomalies")
      .option('--raw', 'the recorded registry responses of the last scans (credentials redacted)')
      .option('--wide', 'a table with first-seen and last-seen times and digests')
      .option('--limit <n>', 'how many scans --history and --raw show (default 20 and 5)'),
  );
  cmd.action(
    action(async (ctx, name: string) => {
      const opts = cmd.opts<TagsOptions>();
      if (opts.history && opts.raw)
        throw new UsageError('--history and --raw show different things; give one of them');
      // A read-only command: a mistyped --state-dir must not leave an empty database behind.
      const store = await openCommandStore(ctx, {
        mustExist: `no scans in ${ctx.options.stateDir} yet; run "pawl scan" first (or give the right --state-dir)`,
      });
      try {
        const repo = await resolveRepository(ctx, store, name);
        if (opts.history) return await history(ctx, store, repo, parseLimit(opts.limit, 20));
        if (opts.raw) return await raw(ctx, store, repo, parseLimit(opts.limit, 5));
        return await current(ctx, store, repo, opts.wide === true);
      } finally {
        await store.close();
      }
    }),
  );
}

async function current(ctx: CommandContext, store: Store, repo: string, wide: boolean): Promise<number> {
  const [good, last, infos] = await Promise.all([
    store.lastGoodScan(repo),
    store.lastScan(repo),
    store.currentTagInfos(repo),
  ]);
  if (!good) {
    const why = last?.error ? `; the last scan failed: ${last.error}` : '';
    throw new RuntimeError(`${repo} has no good scan yet${why}`);
  }
  if (ctx.options.json) {
    writeJson(ctx, tagsView(repo, good, last, infos));
    return 0;
  }
  if (last && last.id !== good.id) {
    ctx.stderr.write(
      `pawl: the last scan of ${repo} (${formatTime(last.startedAt)}) ${last.outcome === 'running' ? 'has not finished' : `failed: ${last.error ?? ''}`}; ` +
        `these are the tags of the scan at ${formatTime(good.startedAt)}\n`,
    );
  }
  if (!wide) {
    for (const i of infos) writeLine(ctx, i.tag);
    return 0;
  }
  writeLine(
    ctx,
    table(
      ['TAG', 'FIRST SEEN', 'LAST SEEN', 'DIGEST'],
      // Tags of the very first scan have no known arrival time (SPEC §4).
      infos.map((i) => [
        i.tag,
        i.initial ? `before ${formatTime(i.firstSeen)}` : formatTime(i.firstSeen),
        formatTime(i.lastSeen),
        i.digest ?? '',
      ]),
    ),
  );
  return 0;
}

async function history(ctx: CommandContext, store: Store, repo: string, limit: number): Promise<number> {
  const scans = await store.scanHistory(repo, limit);
  if (ctx.options.json) {
    writeJson(ctx, { name: repo, scans });
    return 0;
  }
  writeLine(
    ctx,
    table(
      ['STARTED', 'OUTCOME', 'TAGS', 'REQUESTS', 'ADDED', 'REMOVED', 'ANOMALIES / ERROR'],
      scans.map((s) => [
        formatTime(s.startedAt),
        s.outcome,
        s.tagCount === null ? '-' : String(s.tagCount),
        String(s.requests),
        changeList('+', s.added),
        changeList('-', s.removed),
        s.outcome === 'failed' ? (s.error ?? '') : anomalyKinds(s.anomalies),
      ]),
    ),
  );
  return 0;
}

async function raw(ctx: CommandContext, store: Store, repo: string, limit: number): Promise<number> {
  const scans = (await store.rawResponses(repo)).slice(0, limit);
  if (ctx.options.json) {
    writeJson(ctx, { name: repo, scans });
    return 0;
  }
  if (scans.length === 0) {
    writeLine(ctx, `no recorded responses for ${repo}`);
    return 0;
  }
  for (const s of scans) {
    writeLine(
      ctx,
      `# scan ${s.scanId} at ${formatTime(s.startedAt)} (${s.outcome})${s.truncated ? ', truncated to the size bound' : ''}`,
    );
    for (const r of s.responses) {
      writeLine(ctx, formatResponse(r));
      writeLine(ctx);
    }
  }
  return 0;
}
