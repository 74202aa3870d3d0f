import { Argument, type Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine } from '../context.js';
import { action } from '../action.js';
import { configJson, loadCommandConfig, resolveNamed, type CommandConfig } from '../config.js';
import { qualified } from '../names.js';
import type { Kind, PawlObject } from '../../config/index.js';
import { setSuspend } from '../../run/index.js';

const KINDS = ['automation', 'repository', 'policy'] as const;
type What = (typeof KINDS)[number];

function objectOf(loaded: CommandConfig, what: What, name: string): PawlObject {
  const { config } = loaded;
  const [map, kind]: [Map<string, PawlObject>, Kind] =
    what === 'automation'
      ? [config.automations, 'ImageUpdateAutomation']
      : what === 'repository'
        ? [config.imageRepositories, 'ImageRepository']
        : [config.imagePolicies, 'ImagePolicy'];
  return resolveNamed(loaded, map, name, kind);
}

function verb(program: Command, suspend: boolean): void {
  const name = suspend ? 'suspend' : 'resume';
  const cmd = withGlobalOptions(
    program
      .command(name)
      .addArgument(new Argument('<kind>', 'automation, repository or policy').choices(KINDS))
      .argument('<name>', 'NAMESPACE/NAME, or NAME with -n')
      .description(
        suspend
          ? "commit spec.suspend: true into the object's file and push it"
          : "commit the removal of the object's spec.suspend and push it",
      )
      .option('-n, --namespace <ns>', "the object's namespace", 'flux-system')
      .option('--reason <text>', 'why; recorded in the commit')
      .option('--dry-run', 'say what would be committed; change nothing'),
  );
  cmd.action(
    action(async (ctx, what: What, objectName: string) => {
      const o = cmd.opts<{ namespace: string; reason?: string; dryRun?: boolean }>();
      const loaded = await loadCommandConfig(ctx);
      const object = objectOf(loaded, what, qualified(objectName, o.namespace));
      const r = await setSuspend(
        { config: loaded.config, stateDir: ctx.options.stateDir, log: ctx.log },
        object,
        suspend,
        { ...(o.reason ? { reason: o.reason } : {}), ...(o.dryRun ? { dryRun: true } : {}) },
      );
      if (ctx.options.json) writeJson(ctx, { ...r, ...configJson(loaded) });
      else {
        writeLine(ctx, `${r.object}: ${r.message}`);
        if (r.result === 'pushed')
          writeLine(
            ctx,
            `  pull it into ${object.source.file}'s checkout; pawl serve applies it when its configuration reloads`,
          );
      }
      return loaded.exitFloor;
    }),
  );
}

export function register(program: Command): void {
  // `suspend` and `resume` share this module: each invocation registers both.
  if (!program.commands.some((c) => c.name() === 'suspend')) {
    verb(program, true);
    verb(program, false);
  }
}
