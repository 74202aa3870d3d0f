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
  type RepositoryRow,
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

/** One kind's table: Flux's kind, its column between NAME and SUSPENDED, and its rows with that cell. */
interface Table {
  kind: string;
  column: string;
  rows: (rows: Partial<Rows>) => [Row, string | null][] | undefined;
}
type Row = Pick<RepositoryRow, 'namespace' | 'name' | 'suspended' | 'ready' | 'message'>;

/** In Flux's order; the tables share every other column. */
const TABLES: readonly Table[] = [
  {
    kind: 'imagerepository',
    column: 'LAST SCAN',
    rows: (rows) => rows.repositories?.map((r) => [r, r.lastScan]),
  },
  {
    kind: 'imagepolicy',
    column: 'LATEST IMAGE',
    rows: (rows) => rows.policies?.map((p) => [p, p.latestImage]),
  },
  {
    kind: 'imageupdateautomation',
    column: 'LAST RUN',
    rows: (rows) => rows.automations?.map((a) => [a, a.lastRun]),
  },
];

/** Flux's columns, with NAMESPACE first when more than one namespace is shown. */
export function renderRows(ctx: CommandContext, rows: Partial<Rows>, namespaces: boolean): void {
  const { bad } = paint(ctx);
  // The message is the last column (never padded): colour there cannot shift the table.
  const said = (r: { ready: string; message: string }) => (r.ready === 'False' ? bad(r.message) : r.message);
  const sections = TABLES.flatMap((t): [string, string[], string[][]][] => {
    const list = t.rows(rows);
    if (!list) return [];
    const cells = list.map(([r, cell]) => [
      r.namespace,
      r.name,
      dash(cell),
      yesNo(r.suspended),
      r.ready,
      said(r),
    ]);
    return [[t.kind, ['NAME', t.column, 'SUSPENDED', 'READY', 'MESSAGE'], cells]];
  });
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
