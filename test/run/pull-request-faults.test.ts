/**
 * A whole pass whose forge misbehaves, against the GitHub stand-in that validates every request
 * against GitHub's OpenAPI description (test/helpers/openapi-forge.ts): three automations on one
 * repository, each proposing its own branch. The forge answers one automation's create with a
 * 429 (Retry-After), a rate-limit 403 and a 503 before it succeeds — retried on the injected
 * sleep, waiting what the forge asked; it answers 503 to another every time, and a plain 403 to
 * the third. The pass reports those two with the automation's name, the first's pull request is
 * opened, nothing crashes, and the token is in no error.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { createScanClients } from '../../src/scan/index.js';
import { openSqliteStore } from '../../src/store/index.js';
import { directScans, runPass, type RunReport } from '../../src/run/index.js';
import { silentLogger } from '../../src/util/index.js';
import { pushTags } from '../helpers/push.js';
import { runGit } from '../helpers/git-server.js';
import { GIT_PASSWORD, GIT_USER, imageObjects, startWorld, type World } from '../helpers/world.js';
import {
  githubDescription,
  startOpenApiForge,
  type ForgeAnswer,
  type ForgeCall,
  type OpenApiForge,
} from '../helpers/openapi-forge.js';

const TOKEN = 'ghp_faultsTOKEN0123456789abcdef';
const NAMES = ['ok', 'down', 'denied'] as const;

const automation = (name: string, apiURL: string) => `apiVersion: image.pawl.dev/v1alpha1
kind: ImageUpdateAutomation
metadata: { name: ${name}, namespace: flux-system }
spec:
  interval: 5m
  sourceRef: { kind: GitRepository, name: fleet }
  git:
    checkout: { ref: { branch: main } }
    commit:
      author: { name: pawl-bot, email: pawl@example.com }
    push:
      branch: 'pawl/{{ .AutomationObject.Name }}'
      pullRequest:
        provider: github
        apiURL: ${apiURL}
        secretRef: { name: forge-token }
        labels: [images]
  update: { path: ./, strategy: Setters }
`;

describe('a pass whose forge rate-limits and fails', () => {
  let w: World;
  let stand: OpenApiForge;
  let report: RunReport;
  let pass: () => Promise<RunReport>;
  const waits: { ms: number; after: string }[] = [];
  const creates = new Map<string, number>();

  before(async () => {
    const desc = githubDescription();
    const pullExample = desc.example('pulls/create', '201');
    let number = 0;
    stand = await startOpenApiForge(desc, (call: Omit<ForgeCall, 'status'>): ForgeAnswer => {
      const body = (call.body ?? {}) as Record<string, unknown>;
      if (call.operationId === 'pulls/list') return { status: 200, body: [] };
      if (call.operationId === 'issues/add-labels')
        return { status: 200, body: desc.example('issues/add-labels', '200') };
      if (call.operationId !== 'pulls/create') return { status: 501, body: { message: call.operationId } };
      const head = String(body.head);
      const n = (creates.get(head) ?? 0) + 1;
      creates.set(head, n);
      if (head === 'pawl/down') return { status: 503, body: { message: 'Service Unavailable' } };
      if (head === 'pawl/denied')
        return { status: 403, body: { message: 'Resource not accessible by integration' } };
      if (n === 1) return { status: 429, headers: { 'retry-after': '3' }, body: { message: 'slow down' } };
      if (n === 2)
        return {
          status: 403,
          headers: { 'x-ratelimit-remaining': '0', 'retry-after': '5' },
          body: { message: 'API rate limit exceeded' },
        };
      if (n === 3) return { status: 503, body: { message: 'Service Unavailable' } };
      number++;
      return {
        status: 201,
        body: {
          ...pullExample,
          number,
          requested_teams: [],
          title: body.title,
          body: body.body,
          head: { ...(pullExample.head as object), ref: head },
          base: { ...(pullExample.base as object), ref: 'main' },
        },
      };
    });
    w = await startWorld({
      files: { 'README.md': 'the world’s own repository; this test uses org/fleet\n' },
      config: {
        'git.yaml': `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: fleet, namespace: flux-system }
spec:
  interval: 1m
  url: {{ORG_GIT_URL}}
  ref: { branch: main }
  secretRef: { name: git-credentials }
---
apiVersion: v1
kind: Secret
metadata: { name: git-credentials, namespace: flux-system }
type: kubernetes.io/basic-auth
stringData: { username: ${GIT_USER}, password: ${GIT_PASSWORD} }
---
apiVersion: v1
kind: Secret
metadata: { name: forge-token, namespace: flux-system }
stringData: { token: ${TOKEN} }
`,
        'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"'),
        'automations.yaml': [
          ...NAMES.map((n) => automation(n, stand.url)),
          // A template that renders to the base branch itself.
          automation('base', stand.url).replace(`'pawl/{{ .AutomationObject.Name }}'`, `'{{ "main" }}'`),
        ].join('---\n'),
      },
    });
    // GitHub's repositories are OWNER/NAME, and pawl reads them from the GitRepository's URL.
    await w.git.createBareRepo('org/fleet', {
      'deploy.yaml': `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: ${w.registryHost}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n`,
    });
    const gitYaml = await readFile(join(w.configDir, 'git.yaml'), 'utf8');
    await writeFile(
      join(w.configDir, 'git.yaml'),
      gitYaml.replace('{{ORG_GIT_URL}}', w.git.cloneUrl('org/fleet')),
    );
    await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0']);
    const { config, problems } = await loadConfig([w.configDir]);
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    await mkdir(w.stateDir, { recursive: true });
    pass = async () => {
      const store = openSqliteStore(w.stateDir, {});
      try {
        const clients = createScanClients(config, { log: silentLogger });
        return await runPass({
          config,
          store,
          stateDir: w.stateDir,
          clients,
          log: silentLogger,
          scans: directScans({ clients, store, log: silentLogger }),
          forge: {
            sleep: async (ms) => {
              const last = stand.calls.at(-1)!;
              waits.push({ ms, after: `${String((last.body as { head?: string }).head)} ${last.status}` });
            },
          },
        });
      } finally {
        await store.close();
      }
    };
    report = await pass();
  });
  after(async () => {
    await w?.close();
    await stand?.close();
  });

  const of = (name: string) => report.automations.find((a) => a.name === `flux-system/${name}`)!;

  test('429, rate-limit 403 and 503, then success: retried, waiting what the forge said, and the pull request opened', () => {
    const ok = of('ok');
    assert.equal(ok.error, null);
    assert.equal(ok.result, 'pushed');
    assert.equal(ok.pullRequest?.action, 'opened');
    assert.equal(creates.get('pawl/ok'), 4);
    const mine = waits.filter((x) => x.after.startsWith('pawl/ok '));
    assert.deepEqual(mine.slice(0, 2), [
      { ms: 3000, after: 'pawl/ok 429' },
      { ms: 5000, after: 'pawl/ok 403' },
    ]);
    assert.equal(mine[2]?.after, 'pawl/ok 503');
    assert.ok(
      mine[2]!.ms >= 1000 && mine[2]!.ms <= 2000,
      `exponential backoff for the third try: ${mine[2]!.ms}`,
    );
  });

  test('a forge down for every attempt: the pass reports it with the automation’s name', () => {
    const down = of('down');
    assert.equal(down.result, 'failed');
    assert.match(
      down.error ?? '',
      /^ImageUpdateAutomation flux-system\/down: the pull request could not be opened or updated: POST http:\/\/127\.0\.0\.1:\d+\/repos\/org\/fleet\/pulls: answered 503: .*still after 4 attempts$/,
    );
    assert.equal(creates.get('pawl/down'), 4);
  });

  test('a 403 that is no rate limit: reported at once, naming the automation and the token’s scope', () => {
    const denied = of('denied');
    assert.equal(denied.result, 'failed');
    assert.match(
      denied.error ?? '',
      /^ImageUpdateAutomation flux-system\/denied: .*forbidden \(403\): the token may lack the scope/,
    );
    assert.equal(creates.get('pawl/denied'), 1);
  });

  test('a branch template that renders to the base: refused naming the automation, nothing pushed to the base', async () => {
    const b = of('base');
    assert.equal(b.result, 'failed');
    assert.match(
      b.error ?? '',
      /^ImageUpdateAutomation flux-system\/base: spec\.git\.push\.branch renders to main, the branch the pull request would be proposed into/,
    );
    const log = await w.git.log('org/fleet', 'main');
    assert.equal(log.length, 1, 'main has only its first commit');
  });

  test('nothing to propose: the forge is asked for its list only by the automation with a branch beyond the base', async () => {
    // A person sets the tag on main; the branches of two automations are gone (deleted by hand).
    await w.git.commitFiles('org/fleet', 'main', {
      'deploy.yaml': (await w.git.show('org/fleet', 'main', 'deploy.yaml')).replace(':1.0.0 ', ':1.1.0 '),
    });
    for (const b of ['pawl/down', 'pawl/denied'])
      await runGit(['update-ref', '-d', `refs/heads/${b}`], w.git.repoPath('org/fleet'));
    const before = stand.calls.length;
    const second = await pass();
    for (const a of second.automations) assert.equal(a.error, null, `${a.name}: ${a.error}`);
    assert.deepEqual(
      second.automations.map((a) => a.result),
      ['up-to-date', 'up-to-date', 'up-to-date', 'up-to-date'],
    );
    // pawl/ok still holds pawl's commit (a different one from the person's): its list is asked for.
    assert.deepEqual(
      stand.calls.slice(before).map((c) => c.operationId),
      ['pulls/list'],
    );
  });

  test('every request validated against GitHub’s description, and the token is in no report', () => {
    assert.deepEqual(stand.problems, []);
    assert.ok(!JSON.stringify(report).includes(TOKEN));
    assert.deepEqual(
      report.automations.map((a) => a.name).sort(),
      [...NAMES, 'base'].map((n) => `flux-system/${n}`).sort(),
    );
  });
});
