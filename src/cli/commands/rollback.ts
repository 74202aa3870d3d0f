import type { Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { configJson } from '../config.js';
import { withPeopleDeps } from '../people.js';
import { printable } from '../../util/index.js';
import { findPerson, formatIdentity, release, rollback, type AutomationReport } from '../../run/index.js';

function renderAutomations(ctx: CommandContext, reports: AutomationReport[]): number {
  let failed = 0;
  for (const a of reports) {
    const head =
      a.result === 'pushed'
        ? `pushed ${a.commit?.slice(0, 12)} to ${a.branch}`
        : a.result === 'failed'
          ? `failed: ${a.error}`
          : a.result;
    writeLine(ctx, `automation ${a.name}: ${head}`);
    for (const c of a.changes) writeLine(ctx, `  ${c.file}:${c.line} ${c.setter} ${c.old} -> ${c.new}`);
    if (a.result === 'failed') failed++;
    if (a.diff) writeLine(ctx, a.diff.trimEnd());
  }
  return failed > 0 ? 1 : 0;
}

export function register(program: Command): void {
  const rb = withGlobalOptions(
    program
      .command('rollback')
      .argument('<policy>', 'ImagePolicy (NAMESPACE/NAME or a unique NAME)')
      .description(
        "write TAG into the policy's markers on purpose, commit it with trailers; the lines stay pinned until a newer release or `pawl release`",
      )
      .requiredOption('--to <tag>', 'the tag to roll back to (it must exist in the registry)')
      .option('--reason <text>', 'why; recorded in the commit (Pawl-Reason) and shown wherever the pin is')
      .option(
        '--author <"Name <email>">',
        "who asks (the commit's author; the automation commits); default GIT_AUTHOR_NAME/EMAIL, then git config user.name/email",
      )
      .option('--dry-run', 'show the diff; write, commit and push nothing'),
  );
  rb.action(
    action(async (ctx, policyName: string) => {
      const o = rb.opts<{ to: string; reason?: string; author?: string; dryRun?: boolean }>();
      const person = await findPerson(o.author !== undefined ? { author: o.author } : {});
      if (!person)
        ctx.stderr.write(
          'pawl: who asks for this rollback is not recorded (the commit is the automation\'s): give --author "Name <email>", or set git config user.name and user.email\n',
        );
      return withPeopleDeps(ctx, policyName, async (deps, policy, loaded) => {
        const r = await rollback(deps, policy, {
          to: o.to,
          ...(o.reason ? { reason: o.reason } : {}),
          ...(o.dryRun ? { dryRun: true } : {}),
          ...(person ? { requestedBy: person.identity } : {}),
        });
        if (ctx.options.json) {
          writeJson(ctx, { ...r, ...configJson(loaded) });
          return r.automations.some((a) => a.result === 'failed') ? 1 : loaded.exitFloor;
        }
        writeLine(
          ctx,
          `rollback of ${r.policy} to ${r.to}` +
            (r.requestedBy ? ` by ${printable(formatIdentity(r.requestedBy))} (from ${person!.from})` : '') +
            (r.reason ? `, because: ${printable(r.reason)}` : '') +
            ':',
        );
        const code = renderAutomations(ctx, r.automations);
        if (code === 0 && r.automations.every((a) => a.result === 'up-to-date'))
          writeLine(ctx, `every marker of ${r.policy} already holds ${r.to}`);
        return Math.max(code, loaded.exitFloor);
      });
    }),
  );

  const rel = withGlobalOptions(
    program
      .command('release')
      .argument('<policy>', 'ImagePolicy (NAMESPACE/NAME or a unique NAME)')
      .description("lift the policy's pins: write its current candidate now")
      .option('--dry-run', 'show the diff; write, commit and push nothing'),
  );
  rel.action(
    action(async (ctx, policyName: string) => {
      const o = rel.opts<{ dryRun?: boolean }>();
      return withPeopleDeps(ctx, policyName, async (deps, policy, loaded) => {
        const r = await release(deps, policy, o.dryRun ? { dryRun: true } : {});
        if (ctx.options.json) {
          writeJson(ctx, { ...r, ...configJson(loaded) });
          return r.candidate === null || r.automations.some((a) => a.result === 'failed')
            ? 1
            : loaded.exitFloor;
        }
        if (r.candidate === null) {
          ctx.stderr.write(`pawl: ${r.policy} has no candidate to release: ${r.error ?? 'unknown'}\n`);
          return 1;
        }
        writeLine(ctx, `release of ${r.policy} at ${r.candidate}:`);
        return Math.max(renderAutomations(ctx, r.automations), loaded.exitFloor);
      });
    }),
  );
}
