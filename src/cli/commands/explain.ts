import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { table } from '../table.js';
import { configJson, shownPath } from '../config.js';
import { withPeopleDeps } from '../people.js';
import { explain, markersOutsideAutomations, type Explanation } from '../../run/index.js';
import { commandSpeller } from '../../util/index.js';

export function register(program: Command): void {
  const cmd = withGlobalOptions(
    program
      .command('explain')
      .argument('<policy>', 'ImagePolicy (NAMESPACE/NAME or a unique NAME)')
      .description(
        'why: ranked candidates and their ordering keys, the high-water mark, every marker and its decision, pins, recent scans',
      )
      .option('--candidates <n>', 'how many ranked candidates to show', '10'),
  );
  cmd.action(
    action(async (ctx, policyName: string) => {
      const n = Number(cmd.opts<{ candidates: string }>().candidates);
      return withPeopleDeps(ctx, policyName, async (deps, policy, loaded) => {
        const e = await explain(deps, policy, {
          candidates: Number.isInteger(n) && n > 0 ? n : 10,
          // The commands it offers repeat this one's -c, --state-dir…: they act on the same things.
          command: commandSpeller(ctx.options.given ?? []),
        });
        // Markers no automation reaches are the other half of "why does nothing change".
        const outside = (await markersOutsideAutomations(loaded.config, e.policy)).map((m) => ({
          ...m,
          file: shownPath(m.file),
        }));
        if (ctx.options.json) writeJson(ctx, { ...e, outsideAutomations: outside, ...configJson(loaded) });
        else {
          renderExplanation(ctx, e);
          if (outside.length > 0) {
            writeLine(ctx, '');
            writeLine(
              ctx,
              "Markers naming this policy outside every automation's update.path (never updated):",
            );
            for (const m of outside) writeLine(ctx, `  ${m.file}:${m.line} ${m.setter}`);
          }
        }
        return e.automationErrors.length > 0 ? 1 : loaded.exitFloor;
      });
    }),
  );
}

export function renderExplanation(ctx: CommandContext, e: Explanation): void {
  writeLine(
    ctx,
    `ImagePolicy ${e.policy}: ${e.strategy}, image ${e.image} (ImageRepository ${e.repository})`,
  );
  if (e.counts) {
    const c = e.counts;
    writeLine(
      ctx,
      `  ${c.tags} tags in the last good scan; ${c.excluded} excluded, ${c.filteredOut} filtered out, ${c.unparsable} unparsable, ${c.outOfRange} out of range`,
    );
  }
  writeLine(
    ctx,
    `  selected: ${e.selected ?? '(none)'}   candidate: ${e.candidate ?? '(none)'}${e.error ? `   (${e.error})` : ''}`,
  );
  if (e.unverified)
    writeLine(ctx, `  unverified: ${e.unverified.tag} ${e.unverified.why} (spec.verify; never a candidate)`);
  writeLine(ctx, `  ${e.ratchet}`);
  if (e.candidates.length > 0) {
    writeLine(ctx, '');
    writeLine(
      ctx,
      table(
        ['RANK', 'TAG', 'KEY'],
        e.candidates.map((c) => [String(c.rank), c.tag, c.key]),
      ),
    );
  }
  writeLine(ctx, '');
  if (e.markers.length === 0) writeLine(ctx, 'No marker names this policy.');
  for (const m of e.markers) {
    writeLine(ctx, `${m.file}:${m.line} ${m.setter} = ${m.value}`);
    writeLine(ctx, `  ${m.action === 'write' ? 'would write' : 'keep'} (${m.words}): ${m.detail}`);
    if (m.pin && m.pin.state !== 'none') {
      writeLine(ctx, `  pin: ${m.pin.detail}${m.pin.author ? ` [${m.pin.author}, ${m.pin.time}]` : ''}`);
      // Who and why on lines of their own: what a person looks for first in a pin.
      if (m.pin.author)
        writeLine(ctx, `  ${m.pin.kind === 'rollback' ? 'rolled back by' : 'edited by'}: ${m.pin.author}`);
      if (m.pin.kind === 'rollback') writeLine(ctx, `  reason: ${m.pin.reason ?? '(none given)'}`);
    }
    if (m.advice) writeLine(ctx, `  ${m.advice}`);
  }
  for (const a of e.automationErrors) writeLine(ctx, `automation ${a.automation}: ${a.error}`);
  for (const p of e.proposals) {
    if (p.pullRequest)
      writeLine(
        ctx,
        `automation ${p.automation}: pull request #${p.pullRequest.number} (${p.pullRequest.state}): ${p.pullRequest.url}`,
      );
    if (p.batch)
      writeLine(
        ctx,
        `automation ${p.automation}: commit batch open since ${p.batch.openedAt}; its writes are held until ${p.batch.writesAt}`,
      );
  }
  if (e.markers.length > 0) {
    writeLine(ctx, '');
    writeLine(ctx, `To roll back on purpose: ${e.commands.rollback}`);
    if (e.markers.some((m) => m.reason === 'pinned'))
      writeLine(ctx, `To lift the pin: ${e.commands.release}`);
  }
  if (e.scans.length > 0) {
    writeLine(ctx, '');
    writeLine(
      ctx,
      table(
        ['SCAN', 'OUTCOME', 'TAGS', '+', '-', 'ANOMALIES'],
        e.scans.map((s) => [
          s.at,
          s.outcome + (s.error ? `: ${s.error}` : ''),
          s.tags === null ? '' : String(s.tags),
          String(s.added),
          String(s.removed),
          s.anomalies.join('; '),
        ]),
      ),
    );
  }
  if (e.events.length > 0) {
    writeLine(ctx, '');
    writeLine(ctx, 'Recent guard events:');
    for (const ev of e.events) writeLine(ctx, `  ${ev.at} ${ev.kind} ${JSON.stringify(ev.detail)}`);
  }
}
