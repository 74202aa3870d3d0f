import { Option, type Command } from 'commander';
import { daemonGlobals, withGlobalOptions } from '../context.js';
import { action } from '../action.js';
import { commandStorePassword, commandStoreSpec, openCommandStore } from '../store.js';
import { loadOptions } from '../config.js';
import { parseDuration } from '../../config/index.js';
import {
  HEAP_MODES,
  UsageError,
  deferOptimizer,
  saveCodeCache,
  heapFlagsGiven,
  optimizerFlagsGiven,
  tuneHeap,
  type HeapMode,
} from '../../util/index.js';
import {
  createServeLogger,
  DEFAULT_ADMIN_LISTEN,
  DEFAULT_GRACE_PERIOD_MS,
  DEFAULT_LISTEN,
  LogOutput,
  startServer,
  type KubernetesOptions,
} from '../../serve/index.js';
import { loadConnection } from '../../kube/index.js';

/** The longest the daemon runs without TurboFan after its start (src/util/heap.ts, deferOptimizer). */
const OPTIMIZER_AFTER_MS = 60_000;

interface ServeCliOptions {
  listen: string;
  adminListen: string;
  gracePeriod?: string;
  dryRun?: boolean;
  watch: boolean;
  startSpread?: string;
  adminTokenFile?: string;
  heap: HeapMode;
  leaseTtl?: string;
  heartbeat?: string;
  replicaId?: string;
  kubernetes?: boolean;
  kubeconfig?: string;
  kubeContext?: string;
  watchNamespace?: string;
  watchLabelSelector?: string;
  enableLeaderElection?: boolean;
  eventsAddr?: string;
  leaderElectionLeaseDuration?: string;
  leaderElectionRenewDeadline?: string;
  leaderElectionRetryPeriod?: string;
}

export function register(program: Command): void {
  const cmd = withGlobalOptions(
    program
      .command('serve')
      .description(
        'the daemon: every object on its interval, webhook receivers, metrics, health and a JSON API',
      )
      .option('--listen <addr>', 'webhook receivers (HOST:PORT or :PORT)', DEFAULT_LISTEN)
      .option(
        '--admin-listen <addr>',
        'metrics, /healthz, /readyz, the JSON API and the dashboard',
        DEFAULT_ADMIN_LISTEN,
      )
      .option(
        '--admin-token-file <file>',
        'a token the dashboard, the API and /metrics require (needed when --admin-listen is not loopback)',
      )
      .option(
        '--grace-period <duration>',
        'on SIGTERM, how long a pass in progress may take to finish',
        '30s',
      )
      .option('--dry-run', 'compute everything, write and push nothing (to compare with Flux first)')
      .option('--no-watch', 'reload only on SIGHUP, not when a configuration file changes')
      .addOption(
        new Option('--heap <mode>', "small: keep the heap near its live size; default: node's own sizing")
          .choices(HEAP_MODES)
          .default('small'),
      )
      .option('--lease-ttl <duration>', 'replicas: how long a lease and a heartbeat last unrenewed', '30s')
      .option('--heartbeat <duration>', 'replicas: how often they are renewed', '10s')
      .option('--replica-id <id>', "replicas: this replica's id (default HOST-PID-RANDOM)")
      .option(
        '--kubernetes',
        "read the objects from the Kubernetes API server and write Flux's status back (instead of -c)",
      )
      .option(
        '--kubeconfig <file>',
        'Kubernetes: the kubeconfig (default: in-cluster, else KUBECONFIG, ~/.kube/config)',
      )
      .option('--kube-context <name>', 'Kubernetes: a context of the kubeconfig other than its current one')
      .option('--watch-namespace <ns>', 'Kubernetes: only this namespace (default: all)')
      .option(
        '--watch-label-selector <selector>',
        "Kubernetes: only image objects with these labels (Flux's flag)",
      )
      .option(
        '--events-addr <url>',
        "Kubernetes: also post each Event to notification-controller, as Flux's controllers (Alerts)",
      )
      .option(
        '--enable-leader-election',
        'Kubernetes: act only while holding the coordination.k8s.io Lease pawl-leader-election (replicas)',
      )
      .option(
        '--leader-election-lease-duration <duration>',
        'Kubernetes: how long the Lease lasts unrenewed',
        '15s',
      )
      .option(
        '--leader-election-renew-deadline <duration>',
        'Kubernetes: how long the leader tries to renew',
        '10s',
      )
      .option('--leader-election-retry-period <duration>', 'Kubernetes: how often the Lease is tried', '2s')
      // Tests and benches: start every object at once instead of spreading the first runs.
      .addOption(new Option('--start-spread <duration>').hideHelp()),
  );
  cmd.action(
    action(async (ctx) => {
      const opts = cmd.opts<ServeCliOptions>();
      // First thing: the young generation grows as the daemon allocates, from here on only to the size allowed.
      const heapFlags = heapFlagsGiven(process.execArgv, process.env.NODE_OPTIONS) ? [] : tuneHeap(opts.heap);
      // The start runs as a one-shot pass does, without TurboFan; it is on a second after the first pass.
      const optimizerOn = deferOptimizer(optimizerFlagsGiven(process.execArgv, process.env.NODE_OPTIONS));
      const graceMs =
        opts.gracePeriod === undefined
          ? DEFAULT_GRACE_PERIOD_MS
          : duration(opts.gracePeriod, '--grace-period');
      // Records are written at once until the signals below are handled, then gathered (LogOutput).
      const output = new LogOutput(2);
      const log = createServeLogger({
        output,
        level: ctx.options.logLevel === 'warn' && !process.env.PAWL_LOG_LEVEL ? 'info' : ctx.options.logLevel,
        redactor: ctx.redactor,
      });
      // The store's spec and password also tell the daemon whether it is one of several replicas.
      const storeSpec = commandStoreSpec(ctx);
      const storePassword = storeSpec.kind === 'postgres' ? await commandStorePassword(ctx) : undefined;
      const kubernetes = kubernetesOptions(opts, (ctx.options.given ?? []).includes('-c'));
      const server = await startServer({
        ...(kubernetes ? { kubernetes } : {}),
        storeSpec,
        ...(storePassword !== undefined ? { storePassword } : {}),
        cluster: {
          leaseTtlMs: duration(opts.leaseTtl ?? '30s', '--lease-ttl'),
          heartbeatMs: duration(opts.heartbeat ?? '10s', '--heartbeat'),
          ...(opts.replicaId ? { replicaId: opts.replicaId } : {}),
        },
        configPaths: kubernetes ? [] : ctx.options.config,
        commandGlobals: daemonGlobals(ctx.options),
        // --secrets-dir and PAWL_SECRET_*, as every other command reads them (at start and on reload).
        loadOptions: loadOptions(ctx),
        stateDir: ctx.options.stateDir,
        openStore: () => openCommandStore(ctx),
        log,
        listen: opts.listen,
        adminListen: opts.adminListen,
        dryRun: opts.dryRun === true,
        strict: ctx.options.strict,
        watch: opts.watch,
        ...(opts.adminTokenFile ? { adminTokenFile: opts.adminTokenFile } : {}),
        ...(opts.startSpread !== undefined
          ? { startSpreadMs: duration(opts.startSpread, '--start-spread') }
          : {}),
      });
      log.debug({ heap: opts.heap, v8Flags: heapFlags }, 'heap sizing');
      // A start that takes long (a fleet's first scans, an automation not yet there) is no longer
      // a short burst: the optimizer comes on after OPTIMIZER_AFTER_MS at the latest.
      let timer: NodeJS.Timeout | undefined;
      void Promise.race([
        server.started,
        new Promise((r) => (timer = setTimeout(r, OPTIMIZER_AFTER_MS).unref())),
      ]).then(() => {
        clearTimeout(timer);
        // The built CLI's code cache, holding what the start compiled; before the optimizer flag
        // changes, since V8 accepts a cache only under the flags it was made with (launch.ts).
        saveCodeCache();
        if (optimizerOn) log.debug({ v8Flags: optimizerOn() }, 'optimizer on');
      });
      const onHup = () => void server.daemon.reload('SIGHUP');
      process.on('SIGHUP', onHup);
      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        process.once('SIGTERM', () => resolve('SIGTERM'));
        process.once('SIGINT', () => resolve('SIGINT'));
        // A signal now ends in process.exit, whose `exit` writes what is gathered.
        output.buffer();
      });
      process.off('SIGHUP', onHup);
      log.info({ signal, graceMs }, 'stopping');
      // A second signal during the grace period stops at once.
      const again = () => {
        log.warn('second signal: exiting now');
        process.exit(1);
      };
      process.once('SIGTERM', again);
      process.once('SIGINT', again);
      const outcome = await server.stop(graceMs);
      log.info({ outcome }, 'stopped');
      // Abandoned runs still hold the event loop (and the registry clients keep sockets): exit now.
      process.exit(0);
    }),
  );
}

/** `--kubernetes` and its options; undefined in files mode (and its options then refused). */
function kubernetesOptions(opts: ServeCliOptions, configGiven: boolean): KubernetesOptions | undefined {
  const kubeOnly = (
    [
      ['--kubeconfig', opts.kubeconfig],
      ['--kube-context', opts.kubeContext],
      ['--watch-namespace', opts.watchNamespace],
      ['--watch-label-selector', opts.watchLabelSelector],
      ['--enable-leader-election', opts.enableLeaderElection],
      ['--events-addr', opts.eventsAddr],
    ] as const
  ).filter(([, v]) => v !== undefined);
  if (!opts.kubernetes) {
    if (kubeOnly.length > 0) throw new UsageError(`${kubeOnly[0]![0]} needs --kubernetes`);
    return undefined;
  }
  // PAWL_CONFIG (the base Deployment sets it) is only -c's default: --kubernetes overrides it.
  if (configGiven)
    throw new UsageError('--kubernetes reads the objects from the API server: give it or -c, not both');
  return {
    connection: loadConnection({
      ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
      ...(opts.kubeContext ? { context: opts.kubeContext } : {}),
    }),
    ...(opts.watchNamespace ? { namespace: opts.watchNamespace } : {}),
    ...(opts.watchLabelSelector ? { labelSelector: opts.watchLabelSelector } : {}),
    ...(opts.eventsAddr ? { eventsAddr: opts.eventsAddr } : {}),
    ...(opts.enableLeaderElection
      ? {
          leaderElection: {
            leaseDurationMs: duration(
              opts.leaderElectionLeaseDuration ?? '15s',
              '--leader-election-lease-duration',
            ),
            renewDeadlineMs: duration(
              opts.leaderElectionRenewDeadline ?? '10s',
              '--leader-election-renew-deadline',
            ),
            retryPeriodMs: duration(opts.leaderElectionRetryPeriod ?? '2s', '--leader-election-retry-period'),
          },
        }
      : {}),
  };
}

function duration(raw: string, option: string): number {
  try {
    return parseDuration(raw);
  } catch {
    throw new UsageError(`${option}: "${raw}" is not a duration (e.g. 30s, 2m)`);
  }
}
