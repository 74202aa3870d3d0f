import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { table } from '../table.js';
import { paint, statusLine } from '../terminal.js';
import { configJson, loadCommandConfig, resolveNamed } from '../config.js';
import { openCommandStore } from '../store.js';
import { createScanClients, anomalyKinds } from '../../scan/index.js';
import { directScans, runPass, passExitCode, type RunReport } from '../../run/index.js';
import { REASON_LABELS, type Reason } from '../../guard/index.js';

interface RunOptions {
  dryRun?: boolean;
  refresh?: boolean;
  automation?: string[];
}

export function register(program: Command): void {
  const cmd = withGlobalOptions(
    program
      .command('run')
      .description('one full pass: scan what is due, select, guard, write, commit and push')
      .option('--dry-run', 'compute everything and show the diff; write, commit and push nothing')
      .option('--refresh', 'scan every ImageRepository now, due or not')
      .option(
        '--automation <name>',
        'only this ImageUpdateAutomation (repeatable)',
        (v: string, p: string[]) => [...p, v],
        [] as string[],
      ),
  );
  cmd.action(
    action(async (ctx) => {
      const opts = cmd.opts<RunOptions>();
      const loaded = await loadCommandConfig(ctx);
      const { config } = loaded;
      const automations = opts.automation?.length
        ? opts.automation.map((n) => resolveNamed(loaded, config.automations, n, 'ImageUpdateAutomation'))
        : undefined;
      const store = await openCommandStore(ctx);
      // A long run on a terminal says where it is: each scan, then each automation.
      const progress = statusLine(ctx);
      try {
        const clients = createScanClients(config, { log: ctx.log, buildTimes: store.buildTimeCache() });
        const report = await runPass(
          {
            config,
            store,
            stateDir: ctx.options.stateDir,
            clients,
            log: ctx.log,
            scans: directScans({
              clients,
              store,
              log: ctx.log,
              onScanned: (r, done, total) =>
                progress.show(`scanning ${done}/${total}… ${r.name}${r.error ? ' (failed)' : ''}`),
            }),
          },
          {
            dryRun: opts.dryRun === true,
            refresh: opts.refresh === true,
            onProgress: (what) => progress.show(`${what}…`),
            ...(automations ? { automations } : {}),
          },
        );
        progress.done();
        // Words for people on stderr in both modes; --json carries them in the report too.
        for (const a of report.automations)
          for (const w of a.warnings ?? [])
            ctx.stderr.write(
              `pawl: warning: automation ${a.name}: ${w.file}${w.line ? `:${w.line}` : ''}: ${w.message}\n`,
            );
        if (ctx.options.json) writeJson(ctx, { ...report, ...configJson(loaded) });
        else renderRun(ctx, report);
        return Math.max(passExitCode(report), loaded.exitFloor);
      } finally {
        progress.done();
        await store.close();
      }
    }),
  );
}

export function reasonWords(reason: string): string {
  return (REASON_LABELS as Record<string, string>)[reason as Reason] ?? reason;
}

export function renderRun(ctx: CommandContext, r: RunReport): void {
  const { good, bad } = paint(ctx);
  const failedRepos = r.repositories.filter((x) => x.error || x.anomalies.length > 0);
  for (const x of failedRepos) {
    const stored = x.error && x.errorAt ? ` (${storedWhen(x.errorAt, new Date())})` : '';
    writeLine(
      ctx,
      `repository ${x.name}: ${x.error ? bad(`scan failed${stored}: ${x.error}`) : `anomalies: ${anomalyKinds(x.anomalies)}`}`,
    );
    if (stored)
      writeLine(
        ctx,
        `  this is the last scan's error, not this run's: to retry now, pawl scan ${x.name} or pawl run --refresh`,
      );
  }
  for (const p of r.policies.filter((p) => p.error))
    writeLine(ctx, `policy ${p.name}: no candidate: ${p.error}`);
  if (r.automations.length === 0) writeLine(ctx, 'no ImageUpdateAutomation to run');
  for (const a of r.automations) {
    const head =
      a.result === 'pushed'
        ? good(`pushed ${a.commit?.slice(0, 12)} to ${a.branch}`)
        : a.result === 'failed'
          ? bad(`failed: ${a.error}`)
          : a.result;
    writeLine(ctx, `automation ${a.name}: ${head}`);
    if (a.batch)
      writeLine(ctx, `  held for the commit batch opened ${a.batch.openedAt}: writes at ${a.batch.writesAt}`);
    if (a.pullRequest) {
      const pr = a.pullRequest;
      writeLine(ctx, `  pull request #${pr.number} ${pr.action}: ${pr.url}`);
      if (pr.closed.length > 0)
        writeLine(ctx, `  closed, superseded: ${pr.closed.map((n) => `#${n}`).join(', ')}`);
      if (pr.note) writeLine(ctx, `  note: ${pr.note}`);
    }
    if (a.changes.length > 0) {
      writeLine(
        ctx,
        table(
          ['FILE', 'SETTER', 'OLD', 'NEW', 'REASON'],
          a.changes.map((c) => [`${c.file}:${c.line}`, c.setter, c.old, c.new, c.reason]),
        ).replace(/^/gm, '  '),
      );
    }
    const notable = a.kept.filter((k) => k.reason !== 'up-to-date');
    if (notable.length > 0) {
      writeLine(ctx, '  kept:');
      for (const k of notable)
        writeLine(
          ctx,
          `  ${k.file}:${k.line} ${k.setter} ${k.current} (${reasonWords(k.reason)}): ${k.detail}`,
        );
    }
    const upToDate = a.kept.length - notable.length;
    if (upToDate > 0) writeLine(ctx, `  ${upToDate} marker${upToDate === 1 ? '' : 's'} up to date`);
    if (a.diff) writeLine(ctx, a.diff.trimEnd());
  }
}

/** "at 2026-12-01T20:15:00Z, 3 h ago": when a stored scan said what it said. */
export function storedWhen(at: string, now: Date): string {
  const secs = Math.max(0, Math.round((now.getTime() - new Date(at).getTime()) / 1000));
  const ago =
    secs < 90
      ? `${secs} s`
      : secs < 90 * 60
        ? `${Math.round(secs / 60)} min`
        : secs < 48 * 3600
          ? `${Math.round(secs / 3600)} h`
          : `${Math.round(secs / 86400)} d`;
  return `at ${at.replace(/\.\d{3}Z$/, 'Z')}, ${ago} ago`;
}
