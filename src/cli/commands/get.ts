import { Argument, type Command } from 'commander';
import { withGlobalOptions, writeJson, writeLine, type CommandContext } from '../context.js';
import { action } from '../action.js';
import { table } from '../table.js';
import { paint } from '../terminal.js';
import { configJson, loadCommandConfig } from '../config.js';
import { openCommandStore, storeMissing } from '../store.js';
import { adminClient, namedServer, withServerOptions, type ServerOptions } from '../admin.js';
import {
  rowsFromApi,
  rowsFromStore,
  type ApiAutomation,
  type ApiPolicy,
  type ApiRepository,
  type Rows,
} from '../get-rows.js';

export const GET_WHAT = ['repositories', 'policies', 'automations', 'all'] as const;
type What = (typeof GET_WHAT)[number];

interface GetOptions extends ServerOptions {
  namespace?: string;
  allNamespaces?: boolean;
}

export function register(program: Command): void {
  const cmd = withServerOptions(
    withGlobalOptions(
      program
        .command('get')
        .addArgument(new Argument('<what>', 'repositories, policies, automations or all').choices(GET_WHAT))
        .description(
          'list repositories, policies, automations or all: ready, last scan or run, message (from the store, or --server)',
        )
        .option('-n, --namespace <ns>', 'only this namespace')
        .option('-A, --all-namespaces', 'every namespace (the default)'),
    ),
    'read from this running pawl serve (its --admin-listen URL) instead of the store',
  );
  cmd.action(
    action(async (ctx, what: What) => {
      const opts = cmd.opts<GetOptions>();
      const server = namedServer(opts);
      let rows: Rows;
      let config: ReturnType<typeof configJson> | null = null;
      let floor = 0;
      if (server !== null) {
        const client = await adminClient(ctx, opts, server);
        const [repos, pols, autos] = await Promise.all([
          client.get<ApiRepository[]>('/api/v1/repositories'),
          client.get<ApiPolicy[]>('/api/v1/policies'),
          client.get<ApiAutomation[]>('/api/v1/automations'),
        ]);
        rows = rowsFromApi(repos, pols, autos);
      } else {
        const loaded = await loadCommandConfig(ctx);
        // Read only: no state yet is no database created, every object's state unknown.
        const store = storeMissing(ctx) ? null : await openCommandStore(ctx);
        try {
          rows = await rowsFromStore(loaded.config, store);
        } finally {
          await store?.close();
        }
        config = configJson(loaded);
        floor = loaded.exitFloor;
      }
      const shown = filterRows(rows, opts.allNamespaces ? undefined : opts.namespace);
      if (ctx.options.json) writeJson(ctx, { ...pick(shown, what), ...(config ?? {}) });
      else renderRows(ctx, pick(shown, what), opts.namespace === undefined || opts.allNamespaces === true);
      return floor;
    }),
  );
}

function filterRows(rows: Rows, namespace: string | undefined): Rows {
  if (namespace === undefined) return rows;
  const mine = <T extends { namespace: string }>(list: T[]) => list.filter((r) => r.namespace === namespace);
  return {
    repositories: mine(rows.repositories),
    policies: mine(rows.policies),
    automations: mine(rows.automations),
  };
}

function pick(rows: Rows, what: What): Partial<Rows> {
  return what === 'all' ? rows : { [what]: rows[what] };
}

const yesNo = (b: boolean) => (b ? 'True' : 'False');
const dash = (s: string | null) => s ?? '-';

/** Flux's columns, with NAMESPACE first when more than one namespace is shown. */
export function renderRows(ctx: CommandContext, rows: Partial<Rows>, namespaces: boolean): void {
  const { bad } = paint(ctx);
  // The message is the last column (never padded): colour there cannot shift the table.
  const said = (r: { ready: string; message: string }) => (r.ready === 'False' ? bad(r.message) : r.message);
  const sections: [string, string[], string[][]][] = [];
  if (rows.repositories)
    sections.push([
      'imagerepository',
      ['NAME', 'LAST SCAN', 'SUSPENDED', 'READY', 'MESSAGE'],
      rows.repositories.map((r) => [
        r.namespace,
        r.name,
        dash(r.lastScan),
        yesNo(r.suspended),
        r.ready,
        said(r),
      ]),
    ]);
  if (rows.policies)
    sections.push([
      'imagepolicy',
      ['NAME', 'LATEST IMAGE', 'SUSPENDED', 'READY', 'MESSAGE'],
      rows.policies.map((p) => [
        p.namespace,
        p.name,
        dash(p.latestImage),
        yesNo(p.suspended),
        p.ready,
        said(p),
      ]),
    ]);
  if (rows.automations)
    sections.push([
      'imageupdateautomation',
      ['NAME', 'LAST RUN', 'SUSPENDED', 'READY', 'MESSAGE'],
      rows.automations.map((a) => [
        a.namespace,
        a.name,
        dash(a.lastRun),
        yesNo(a.suspended),
        a.ready,
        said(a),
      ]),
    ]);
  const several = sections.length > 1;
  sections.forEach(([kind, headers, cells], i) => {
    if (i > 0) writeLine(ctx);
    if (cells.length === 0) {
      writeLine(ctx, `no ${kind} objects${namespaces ? '' : ' in this namespace'}`);
      return;
    }
    // With several kinds, names read as Flux prints them: imagepolicy/NAME.
    const named = cells.map(([ns, name, ...rest]) => [ns!, several ? `${kind}/${name}` : name!, ...rest]);
    writeLine(
      ctx,
      namespaces
        ? table(['NAMESPACE', ...headers], named)
        : table(
            headers,
            named.map((r) => r.slice(1)),
          ),
    );
  });
}
