/**
 * deploy/kubernetes: `kubectl kustomize` builds the base and the Prometheus overlay, every object
 * validates against the Kubernetes schemas (kubernetes-models, offline), and the objects fit
 * together: probes, security context, volumes, Services and the ServiceMonitor point at what
 * exists. kubernetes-models checks types, required fields, enums and formats but not unknown
 * fields, so the fields pawl relies on are also checked by value.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import * as apps from 'kubernetes-models/apps/v1';
import * as core from 'kubernetes-models/v1';
import * as policy from 'kubernetes-models/policy/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IService, IPersistentVolumeClaim, IConfigMap } from 'kubernetes-models/v1';
import { ROOT } from '../helpers/world.js';

const exec = promisify(execFile);

type Obj = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
};

async function build(dir: string): Promise<Obj[]> {
  const { stdout } = await exec('kubectl', ['kustomize', join(ROOT, dir)], { maxBuffer: 8 << 20 });
  return parseAllDocuments(stdout).map((d) => d.toJSON() as Obj);
}

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

/** The kubernetes-models class for an object's apiVersion and kind. */
function modelFor(o: Obj): ModelClass | undefined {
  const modules: Record<string, Record<string, unknown>> = {
    v1: core,
    'apps/v1': apps,
    'policy/v1': policy,
  };
  const cls = modules[o.apiVersion]?.[o.kind];
  return typeof cls === 'function' ? (cls as ModelClass) : undefined;
}

function validate(o: Obj): void {
  const Model = modelFor(o);
  assert.ok(Model, `${o.kind} ${o.metadata.name}: no schema for ${o.apiVersion}`);
  new Model(o as never).validate();
}

const one = (objs: Obj[], kind: string, name?: string): Obj => {
  const found = objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.equal(found.length, 1, `expected one ${kind} ${name ?? ''}, found ${found.length}`);
  return found[0]!;
};

interface ServiceMonitor extends Obj {
  spec: {
    selector: { matchLabels: Record<string, string> };
    endpoints: {
      port: string;
      path: string;
      authorization?: { type: string; credentials: { name: string; key: string } };
    }[];
  };
}

function deploymentOf(objs: Obj[]) {
  const d = one(objs, 'Deployment') as unknown as IDeployment;
  const pod = d.spec!.template.spec!;
  return { d, pod, c: pod.containers[0]! };
}

test('the base builds and every object validates against the Kubernetes schemas', async () => {
  const objs = await build('deploy/kubernetes/base');
  assert.deepEqual(objs.map((o) => o.kind).sort(), [
    'ConfigMap',
    'Deployment',
    'PersistentVolumeClaim',
    'Service',
    'Service',
    'ServiceAccount',
  ]);
  for (const o of objs) validate(o);
});

test('the validator is not a no-op: a wrong type in the Deployment is rejected', async () => {
  const objs = await build('deploy/kubernetes/base');
  const broken = structuredClone(one(objs, 'Deployment'));
  const port = deploymentOf([broken]).c.ports![0]! as unknown as Record<string, unknown>;
  port.containerPort = 'webhooks';
  assert.throws(() => validate(broken), /containerPort must be integer/);
  delete port.containerPort;
  assert.throws(() => validate(broken), /containerPort/);
});

test('the Deployment runs pawl serve as the issue asks', async () => {
  const objs = await build('deploy/kubernetes/base');
  const { d, pod, c } = deploymentOf(objs);
  assert.equal(d.spec!.replicas, 1);
  assert.equal(d.spec!.strategy?.type, 'Recreate');
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(pod.securityContext?.runAsNonRoot, true);
  assert.equal(pod.securityContext?.runAsUser, 10001);
  const args = c.args ?? [];
  assert.equal(args[0], 'serve');
  for (const flag of ['--listen=:9292', '--admin-listen=:9293', '--admin-token-file=/etc/pawl/admin/token'])
    assert.ok(args.includes(flag), `args have ${flag}`);
  // As environment, so that `kubectl exec deployment/pawl -- pawl …` reads the same things.
  const env = new Map((c.env ?? []).map((e) => [e.name, e.value]));
  assert.equal(env.get('PAWL_CONFIG'), '/etc/pawl/config');
  assert.equal(env.get('PAWL_SECRETS_DIR'), '/etc/pawl/secrets');
  assert.ok(!args.some((a) => a.startsWith('--config') || a.startsWith('--secrets-dir')));
  assert.deepEqual(c.securityContext, {
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
  });
  assert.equal(c.livenessProbe?.httpGet?.path, '/healthz');
  assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
  const portNames = (c.ports ?? []).map((p) => p.name);
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
    const port = probe?.httpGet?.port;
    assert.ok(typeof port === 'string' && portNames.includes(port), `probe port ${port} exists`);
  }
  assert.ok(c.resources?.requests?.cpu && c.resources.requests.memory && c.resources.limits?.memory);

  // Every mount has its volume; the state dir is the PVC, /tmp an emptyDir, the config the
  // generated ConfigMap (hash-suffixed name), the secrets under PAWL_SECRETS_DIR.
  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  const mountAt = (path: string) => {
    const m = (c.volumeMounts ?? []).find((x) => x.mountPath === path);
    assert.ok(m, `a volume is mounted at ${path}`);
    const v = volumes.get(m.name);
    assert.ok(v, `volume ${m.name} exists`);
    return v;
  };
  const stateDir = (c.env ?? []).find((e) => e.name === 'PAWL_STATE_DIR')?.value;
  assert.equal(stateDir, '/var/lib/pawl');
  const pvc = one(objs, 'PersistentVolumeClaim') as unknown as IPersistentVolumeClaim;
  assert.equal(mountAt(stateDir).persistentVolumeClaim?.claimName, pvc.metadata?.name);
  assert.ok(mountAt('/tmp').emptyDir);
  const cm = one(objs, 'ConfigMap') as unknown as IConfigMap;
  assert.equal(mountAt('/etc/pawl/config').configMap?.name, cm.metadata?.name);
  assert.match(cm.metadata?.name ?? '', /^pawl-config-[a-z0-9]+$/);
  const secretMounts = (c.volumeMounts ?? []).filter((m) => m.mountPath.startsWith('/etc/pawl/secrets/'));
  assert.ok(secretMounts.length > 0);
  for (const m of secretMounts) {
    assert.match(m.mountPath, /^\/etc\/pawl\/secrets\/[a-z0-9-]+\/[a-z0-9.-]+$/, 'DIR/NAMESPACE/NAME');
    assert.ok(volumes.get(m.name)?.secret, `${m.name} is a Secret volume`);
  }
  // The admin listener is not loopback, so pawl serve needs --admin-token-file: a required Secret.
  const token = mountAt('/etc/pawl/admin').secret;
  assert.equal(token?.secretName, 'pawl-admin-token');
  assert.notEqual(token?.optional, true);
});

test('the Services reach the right container ports', async () => {
  const objs = await build('deploy/kubernetes/base');
  const { d, c } = deploymentOf(objs);
  const podLabels = d.spec!.template.metadata?.labels ?? {};
  const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
  const target = (name: string) => {
    const s = one(objs, 'Service', name) as unknown as IService;
    for (const [k, v] of Object.entries(s.spec?.selector ?? {}))
      assert.equal(podLabels[k], v, `${name} selects the pod`);
    assert.equal(s.spec?.ports?.length, 1);
    const t = s.spec!.ports![0]!.targetPort;
    return typeof t === 'string' ? ports.get(t) : t;
  };
  assert.equal(target('pawl-webhooks'), 9292);
  assert.equal(target('pawl-admin'), 9293);
});

test('the Prometheus overlay adds a ServiceMonitor that selects only the admin Service', async () => {
  const objs = await build('deploy/kubernetes/overlays/prometheus');
  // kubernetes-models has no Prometheus Operator schemas: the base objects are validated, the
  // ServiceMonitor is checked by value.
  for (const o of objs) if (o.kind !== 'ServiceMonitor') validate(o);
  const sm = one(objs, 'ServiceMonitor') as ServiceMonitor;
  assert.equal(sm.apiVersion, 'monitoring.coreos.com/v1');
  const services = objs.filter((o) => o.kind === 'Service');
  const selected = services.filter((s) =>
    Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels?.[k] === v),
  ) as unknown as IService[];
  assert.deepEqual(
    selected.map((s) => s.metadata?.name),
    ['pawl-admin'],
  );
  assert.deepEqual(
    sm.spec.endpoints.map((e) => [e.port, e.path]),
    [[selected[0]!.spec!.ports![0]!.name, '/metrics']],
  );
  // /metrics needs the admin token: Prometheus sends it from the same Secret the pod mounts.
  assert.deepEqual(sm.spec.endpoints[0]!.authorization, {
    type: 'Bearer',
    credentials: { name: 'pawl-admin-token', key: 'token' },
  });
});

test('the replicas overlay: three replicas rolling one at a time, the store from a Secret, no volume claim', async () => {
  const objs = await build('deploy/kubernetes/overlays/replicas');
  for (const o of objs) validate(o);
  const d = one(objs, 'Deployment') as unknown as IDeployment;
  assert.equal(d.spec!.replicas, 3);
  assert.equal(d.spec!.strategy!.type, 'RollingUpdate');
  const pod = d.spec!.template.spec!;
  const c = pod.containers.find((x) => x.name === 'pawl')!;
  const env = new Map((c.env ?? []).map((e) => [e.name, e]));
  assert.deepEqual(env.get('PAWL_STORE')!.valueFrom!.secretKeyRef, { name: 'pawl-store', key: 'url' });
  assert.deepEqual(env.get('PAWL_STORE_PASSWORD')!.valueFrom!.secretKeyRef, {
    name: 'pawl-store',
    key: 'password',
  });
  assert.ok(env.has('PAWL_STATE_DIR'), "the base's environment is kept");
  assert.ok(
    !(c.args ?? []).some((a) => a.includes('postgres')),
    'no store URL (or password) on the command line',
  );
  // The working copies are a per-pod cache; nothing claims a ReadWriteOnce volume.
  const state = pod.volumes!.find((v) => v.name === 'state')!;
  assert.ok(state.emptyDir);
  assert.equal(state.persistentVolumeClaim, undefined);
  assert.equal(objs.filter((o) => o.kind === 'PersistentVolumeClaim').length, 0);
  const pdb = one(objs, 'PodDisruptionBudget') as Obj & {
    spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
  };
  const labels = d.spec!.template.metadata!.labels!;
  assert.ok(Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => labels[k] === v));
  assert.equal(pdb.spec.maxUnavailable, 1);
});

test('the kubernetes-mode overlay: --kubernetes with leader election, a token, and RBAC that writes only status, Events and its Lease', async () => {
  const objs = await build('deploy/kubernetes/overlays/kubernetes-mode');
  for (const o of objs.filter((x) => !x.apiVersion.startsWith('rbac.'))) validate(o);
  const { pod, c } = deploymentOf(objs);
  assert.ok(c.args!.includes('--kubernetes') && c.args!.includes('--enable-leader-election'));
  assert.ok(!c.args!.some((a) => a.startsWith('--config')), 'the objects come from the API server');
  assert.equal(pod.automountServiceAccountToken, true);
  assert.equal(
    (one(objs, 'ServiceAccount') as Obj & { automountServiceAccountToken: boolean })
      .automountServiceAccountToken,
    true,
  );
  type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
  const rules = (one(objs, 'ClusterRole') as Obj & { rules: Rule[] }).rules;
  const writes = rules.filter((r) => r.verbs.some((v) => !['get', 'list', 'watch'].includes(v)));
  // Writes: status subresources only (never spec), and creating Events.
  for (const r of writes)
    assert.ok(
      r.resources.every((x) => x.endsWith('/status') || x === 'events'),
      `the ClusterRole writes ${r.resources.join(', ')}`,
    );
  for (const kind of ['imagerepositories', 'imagepolicies', 'imageupdateautomations'])
    assert.ok(writes.some((r) => r.resources.includes(`${kind}/status`) && r.verbs.includes('patch')));
  const lease = (one(objs, 'Role', 'pawl-leader-election') as Obj & { rules: Rule[] }).rules;
  assert.deepEqual(lease, [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ]);
  for (const b of ['ClusterRoleBinding', 'RoleBinding']) {
    const subjects = (one(objs, b) as Obj & { subjects: { name: string; namespace: string }[] }).subjects;
    assert.deepEqual(subjects, [{ kind: 'ServiceAccount', name: 'pawl', namespace: 'pawl' }]);
  }
});
