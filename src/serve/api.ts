/**
 * The JSON API on the admin listener (docs/api.md documents every field). It serves what
 * `pawl tags --history`, `pawl explain` and `pawl run --json` show, per object, plus the
 * scheduler's view of each job. Nothing here writes; the one POST (`pawl reconcile`) asks a job
 * to run now, through the same work queue and leases as a webhook (reconcile.ts).
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import { KIND_NAMES, configMapOf, refKey } from '../config/index.js';
import { explain } from '../run/index.js';
import { errorMessage, formatProblem } from '../util/index.js';
import { tagsView } from '../scan/index.js';
import { automationJob, repositoryJob } from './jobs/index.js';
import type { LastPass } from './events.js';
import type { JobStatus } from './scheduler.js';
import type { AdminView, DaemonView } from './view.js';
import type { ReconcileKind } from './reconcile.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function jobView(s: JobStatus | null, daemon?: DaemonView): Record<string, unknown> | null {
  if (!s) return null;
  return {
    ...(daemon ? { owner: daemon.coordinator.owns(s.key), skipped: daemon.skipped(s.key) } : {}),
    suspended: s.suspended,
    running: s.running,
    queued: s.queued,
    runs: s.runs,
    failures: s.failures,
    skips: s.skips,
    nextAt: iso(s.nextAt),
    lastRun: s.last
      ? {
          trigger: s.last.trigger,
          startedAt: iso(s.last.startedAt),
          endedAt: iso(s.last.endedAt),
          error: s.last.error,
        }
      : null,
    lastError: s.lastError,
  };
}

interface NameParams {
  namespace: string;
  name: string;
}

function limitOf(q: unknown, fallback: number, max: number): number {
  const raw = (q as { limit?: string } | undefined)?.limit;
  const n = raw === undefined ? fallback : Number(raw);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : fallback;
}

function notFound(reply: FastifyReply, what: string): FastifyReply {
  return reply.code(404).send({ error: `${what} is not in the running configuration` });
}

/** This replica and the others it sees, and the leases it holds (docs/api.md, docs/replicas.md). */
export function replicasView(daemon: DaemonView): Record<string, unknown> {
  const c = daemon.coordinator;
  const now = Date.now();
  const age = (d: Date) => Math.max(0, (now - d.getTime()) / 1000);
  return {
    self: c.replicaId,
    coordinator: c.kind,
    healthy: c.healthy,
    lastHeartbeat: c.lastHeartbeat ? c.lastHeartbeat.toISOString() : null,
    leaseTtlMs: c.leaseTtlMs,
    heartbeatMs: c.heartbeatMs,
    replicas: c.replicas().map((r) => ({
      id: r.id,
      host: r.host,
      pid: r.pid,
      self: r.self,
      live: r.live,
      startedAt: r.startedAt.toISOString(),
      heartbeatAt: r.heartbeatAt.toISOString(),
      heartbeatAgeSeconds: age(r.heartbeatAt),
      expiresAt: r.expiresAt.toISOString(),
      claims: r.claims,
    })),
    claims: c.claims().map((l) => ({
      job: l.key,
      token: l.token,
      acquiredAt: l.acquiredAt.toISOString(),
      renewedAt: l.renewedAt.toISOString(),
      ageSeconds: age(l.acquiredAt),
    })),
  };
}

interface Routes {
  daemon: DaemonView;
}

/** The replicas, and this daemon's status: its configuration, its last reload, its jobs. */
const replicaRoutes: FastifyPluginAsync<Routes> = async (app, { daemon }) => {
  app.get('/api/v1/replicas', async () => replicasView(daemon));

  app.get('/api/v1/status', async () => {
    const { config, loadedAt } = daemon.current;
    const objects: Record<string, number> = {};
    for (const kind of KIND_NAMES) objects[kind] = config[configMapOf(kind)].size;
    const jobs = daemon.jobs();
    const r = daemon.lastReload;
    return {
      startedAt: daemon.startedAt.toISOString(),
      ready: daemon.ready,
      dryRun: daemon.dryRun,
      replica: {
        id: daemon.coordinator.replicaId,
        coordinator: daemon.coordinator.kind,
        healthy: daemon.coordinator.healthy,
        live: daemon.coordinator.replicas().filter((r) => r.live).length,
        claims: daemon.coordinator.claims().length,
      },
      config: {
        paths: daemon.configPaths,
        loadedAt: loadedAt.toISOString(),
        objects,
        lastReload: {
          at: r.at.toISOString(),
          reason: r.reason,
          applied: r.applied,
          added: r.added,
          removed: r.removed,
          changed: r.changed,
          problems: r.problems.map((p) => ({
            file: p.location.file,
            line: p.location.line ?? null,
            object: p.object ?? null,
            severity: p.severity,
            message: p.message,
            text: formatProblem(p),
          })),
        },
      },
      jobs: {
        total: jobs.length,
        running: jobs.filter((j) => j.running).length,
        failing: jobs
          .filter((j) => j.failures > 0)
          .map((j) => ({ job: j.key, failures: j.failures, error: j.lastError })),
      },
    };
  });
};

/** ImageRepositories: their last scans, and what `pawl tags` shows. */
const repositoryRoutes: FastifyPluginAsync<Routes> = async (app, { daemon }) => {
  app.get('/api/v1/repositories', async () => {
    const repos = [...daemon.current.config.imageRepositories.values()];
    const latest = await daemon.store.latestScans(repos.map((r) => refKey(r.metadata)));
    return repos.map((r) => {
      const name = refKey(r.metadata);
      const { finished: last, good } = latest.get(name) ?? { finished: null, good: null };
      return {
        name,
        image: r.spec.image,
        interval: r.spec.interval,
        suspended: r.spec.suspend,
        tags: good?.tagCount ?? null,
        lastScan: last
          ? {
              id: last.id,
              startedAt: last.startedAt.toISOString(),
              outcome: last.outcome,
              tags: last.tagCount,
              anomalies: last.anomalies.map((a) => a.kind),
              error: last.error,
            }
          : null,
        job: jobView(daemon.job(repositoryJob(name)), daemon),
      };
    });
  });

  // `pawl tags NAME --history --json`
  app.get<{ Params: NameParams }>('/api/v1/repositories/:namespace/:name/history', async (req, reply) => {
    const name = `${req.params.namespace}/${req.params.name}`;
    if (!daemon.current.config.imageRepositories.has(name)) return notFound(reply, `ImageRepository ${name}`);
    return { name, scans: await daemon.store.scanHistory(name, limitOf(req.query, 20, 500)) };
  });

  // `pawl tags NAME --json`
  app.get<{ Params: NameParams }>('/api/v1/repositories/:namespace/:name/tags', async (req, reply) => {
    const name = `${req.params.namespace}/${req.params.name}`;
    if (!daemon.current.config.imageRepositories.has(name)) return notFound(reply, `ImageRepository ${name}`);
    const good = await daemon.store.lastGoodScan(name);
    if (!good) return reply.code(404).send({ error: `${name} has no good scan yet` });
    const [last, infos] = await Promise.all([
      daemon.store.lastScan(name),
      daemon.store.currentTagInfos(name),
    ]);
    return tagsView(name, good, last, infos);
  });
};

/** ImagePolicies: their candidate and high water, and what `pawl explain` shows. */
const policyRoutes: FastifyPluginAsync<Routes> = async (app, { daemon }) => {
  app.get('/api/v1/policies', async () => {
    const policies = [...daemon.current.config.imagePolicies.values()];
    const names = policies.map((p) => refKey(p.metadata));
    const [states, selections] = await Promise.all([
      daemon.store.policyStates(names),
      daemon.store.latestSelections(names),
    ]);
    return policies.map((p, i) => {
      const name = names[i]!;
      const state = states.get(name);
      const sel = selections.get(name);
      return {
        name,
        repository: refKey(p.spec.imageRepositoryRef),
        strategy: p.spec.policy.strategy,
        suspended: p.spec.suspend,
        candidate: sel?.candidate ?? null,
        selectedAt: sel ? sel.at.toISOString() : null,
        error: sel?.error ?? null,
        // spec.verify: the newest tag passed over as unsigned or badly signed (docs/gates.md).
        unverified: sel?.unverified ?? null,
        highWater: state?.highWater ?? null,
        highWaterAt: state?.highWaterAt ? state.highWaterAt.toISOString() : null,
      };
    });
  });

  // `pawl explain POLICY --json`
  app.get<{ Params: NameParams }>('/api/v1/policies/:namespace/:name/explain', async (req, reply) => {
    const name = `${req.params.namespace}/${req.params.name}`;
    const { config, clients } = daemon.current;
    const policy = config.imagePolicies.get(name);
    if (!policy) return notFound(reply, `ImagePolicy ${name}`);
    try {
      return await explain(
        { config, store: daemon.store, stateDir: daemon.stateDir, clients, log: daemon.log },
        policy,
        { candidates: limitOf(req.query, 10, 200), command: daemon.command },
      );
    } catch (err) {
      return reply.code(500).send({ error: errorMessage(err) });
    }
  });
};

/** ImageUpdateAutomations: their last pass, with its `pawl run --json` report. */
const automationRoutes: FastifyPluginAsync<Routes> = async (app, { daemon }) => {
  app.get('/api/v1/automations', async () =>
    [...daemon.current.config.automations.values()].map((a) => {
      const name = refKey(a.metadata);
      const last = daemon.lastPass.get(name);
      const ar = last?.report.automations[0];
      return {
        name,
        interval: a.spec.interval,
        suspended: a.spec.suspend,
        repositories: daemon.current.repositoriesOf.get(name) ?? [],
        lastPass: last
          ? {
              ...passWhen(last),
              result: ar?.result ?? null,
              commit: ar?.commit ?? null,
              changes: ar?.changes.length ?? 0,
              error: ar?.error ?? null,
              ...(ar?.pullRequest ? { pullRequest: ar.pullRequest } : {}),
            }
          : null,
        job: jobView(daemon.job(automationJob(name)), daemon),
      };
    }),
  );

  // The last pass's `pawl run --json` report for this automation.
  app.get<{ Params: NameParams }>('/api/v1/automations/:namespace/:name', async (req, reply) => {
    const name = `${req.params.namespace}/${req.params.name}`;
    if (!daemon.current.config.automations.has(name)) return notFound(reply, `ImageUpdateAutomation ${name}`);
    const last = daemon.lastPass.get(name);
    // The whole report is the run's result in the store (the daemon keeps less of it: LastPass).
    let report: unknown = null;
    if (last) {
      try {
        report = (await daemon.store.getRun(last.runId))?.result ?? null;
      } catch (err) {
        return reply.code(500).send({ error: `reading the last pass's report: ${errorMessage(err)}` });
      }
      // Not there (the store was replaced under the daemon): what the daemon kept of it.
      report ??= last.report;
    }
    return {
      name,
      job: jobView(daemon.job(automationJob(name)), daemon),
      lastPass: last
        ? {
            ...passWhen(last),
            dryRun: last.dryRun,
            report,
          }
        : null,
    };
  });
};

/** When a pass ran and why, first in both of the automations' views of it. */
function passWhen(last: LastPass) {
  return {
    startedAt: last.startedAt.toISOString(),
    endedAt: last.endedAt.toISOString(),
    trigger: last.trigger,
    webhooks: last.webhooks,
  };
}

/** The store's events, filtered. */
const eventRoutes: FastifyPluginAsync<Routes> = async (app, { daemon }) => {
  app.get('/api/v1/events', async (req) => {
    const q = req.query as { kind?: string; policy?: string; repository?: string };
    const events = await daemon.store.events({
      ...(q.kind ? { kind: q.kind } : {}),
      ...(q.policy ? { policy: q.policy } : {}),
      ...(q.repository ? { repository: q.repository } : {}),
      limit: limitOf(req.query, 100, 1000),
    });
    return events.map((e) => ({ ...e, at: e.at.toISOString() }));
  });
};

/** A reconcile waits this long for its run at most (`?wait=SECONDS` asks for less or more, up to 30 min). */
const RECONCILE_WAIT_MS = 5 * 60_000;

/**
 * `pawl reconcile`: POST, from the CLI. A browser on another site could POST to a loopback
 * listener without a token; it always sends Origin, so a foreign Origin is refused.
 */
const reconcileRoutes: FastifyPluginAsync<{ daemon: AdminView }> = async (app, { daemon }) => {
  const route = (kind: ReconcileKind, plural: string) =>
    app.post<{ Params: NameParams; Querystring: { wait?: string } }>(
      `/api/v1/${plural}/:namespace/:name/reconcile`,
      async (req, reply) => {
        const origin = req.headers.origin;
        if (origin !== undefined && origin !== `http://${req.headers.host ?? ''}`)
          return reply.code(403).send({ error: `reconcile is not accepted from a web page (${origin})` });
        const secs = Number(req.query.wait);
        const waitMs =
          Number.isFinite(secs) && secs >= 0 ? Math.min(secs * 1000, 30 * 60_000) : RECONCILE_WAIT_MS;
        const answer = await daemon.reconcile(kind, `${req.params.namespace}/${req.params.name}`, waitMs);
        return reply.code(answer.status).send(answer.body);
      },
    );
  route('repository', 'repositories');
  route('automation', 'automations');
};

/** The API's routes, one small plugin per kind of object (after the dashboard's hooks). */
export function registerApi(app: FastifyInstance, daemon: AdminView): void {
  for (const routes of [replicaRoutes, repositoryRoutes, policyRoutes, automationRoutes, eventRoutes])
    void app.register(routes, { daemon });
  void app.register(reconcileRoutes, { daemon });
}
