import { Argument, type Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine } from '../context.js';
import { action } from '../action.js';
import {
  DEFAULT_SERVER,
  adminClient,
  errorOf,
  namedServer,
  withServerOptions,
  type ServerOptions,
} from '../admin.js';
import { qualified } from '../names.js';
import { RuntimeError, UsageError } from '../../util/index.js';

const KINDS = ['repository', 'automation'] as const;
type Kind = (typeof KINDS)[number];
const PLURAL: Record<Kind, string> = { repository: 'repositories', automation: 'automations' };

interface ReconcileOptions extends ServerOptions {
  namespace?: string;
  timeout: string;
}

interface Outcome {
  state?: string;
  error?: string | null;
  message?: string;
}

export function register(program: Command): void {
  const cmd = withServerOptions(
    withGlobalOptions(
      program
        .command('reconcile')
        .addArgument(
          new Argument('<kind>', 'repository (scan it now) or automation (a pass now)').choices(KINDS),
        )
        .argument('<name>', 'NAMESPACE/NAME, or NAME with -n')
        .description(
          'ask the running daemon to scan a repository or run an automation now, and wait for the outcome',
        )
        .option('-n, --namespace <ns>', "the object's namespace", 'flux-system')
        .option('--timeout <seconds>', 'how long to wait for the outcome', '300'),
    ),
    `the running pawl serve's admin listener (default ${DEFAULT_SERVER})`,
  );
  cmd.action(
    action(async (ctx, kind: Kind, name: string) => {
      const opts = cmd.opts<ReconcileOptions>();
      const secs = Number(opts.timeout);
      if (!Number.isFinite(secs) || secs <= 0)
        throw new UsageError(`--timeout must be a number of seconds, not "${opts.timeout}"`);
      const full = qualified(name, opts.namespace ?? 'flux-system');
      const client = await adminClient(ctx, opts, namedServer(opts) ?? DEFAULT_SERVER);
      const { status, json } = await client.post<Outcome>(
        `/api/v1/${PLURAL[kind]}/${full}/reconcile?wait=${secs}`,
        {},
      );
      if (status === 404 || status === 409)
        throw new UsageError(`${errorOf(json)} (pawl serve at ${client.base})`);
      if (status !== 200 && status !== 202)
        throw new RuntimeError(`pawl serve at ${client.base}: ${status} ${errorOf(json)}`);
      if (ctx.options.json) writeJson(ctx, json);
      else writeLine(ctx, `${kind} ${full}: ${json.message ?? ''}`);
      return status === 202 || (json.error ?? null) !== null ? 1 : 0;
    }),
  );
}
