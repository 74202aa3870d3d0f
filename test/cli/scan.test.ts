/**
 * `pawl scan` and `pawl tags` through the CLI, against Debian's real docker-registry.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { pushTags, deleteTag } from '../helpers/push.js';
import { startRegistryProxy, type RegistryProxy } from '../helpers/registry-proxy.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function pawl(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, PAWL_LOG_LEVEL: 'silent', ...env }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function imageRepository(name: string, image: string, extra = ''): string {
  return `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: ${name}
  namespace: apps
spec:
  image: ${image}
  interval: 5m
${extra}---
`;
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface JsonReport {
  name: string;
  tags: number;
  scanned: boolean;
  error: string | null;
  added: string[];
  removed: string[];
  anomalies: { kind: string; count?: number; tags?: string[] }[];
  requests: number;
}

describe('pawl scan and pawl tags on an anonymous registry', () => {
  let registry: TestRegistry;
  let configDir: string;
  let stateDir: string;
  let proxy: RegistryProxy;

  before(async () => {
    registry = await startRegistry();
    proxy = await startRegistryProxy(registry.url, { pageSize: 3 });
    await pushTags(registry.url, 'team/app', [
      '1.0.0',
      '1.1.0',
      '1.2.0',
      '1.3.0',
      '2.0.0',
      '2.0.0.sig',
      'latest',
    ]);
    await pushTags(registry.url, 'team/other', ['a', 'b']);
    configDir = await tempDir('pawl-scan-config-');
    stateDir = await tempDir('pawl-scan-state-');
    await writeFile(
      join(configDir, 'repos.yaml'),
      imageRepository('app', `${proxy.host}/team/app`) +
        imageRepository('other', `${registry.host}/team/other`) +
        imageRepository('paused', `${registry.host}/team/other`, '  suspend: true\n'),
    );
  });
  after(async () => {
    await proxy?.stop();
    await registry?.stop();
  });

  test('scan stores every page; tags lists the last good scan; history shows removed tags and tags-missing', async () => {
    const first = await pawl(['scan', '-c', configDir, '--state-dir', stateDir, '--json']);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const reports = (JSON.parse(first.stdout) as { repositories: JsonReport[] }).repositories;
    assert.deepEqual(
      reports.map((r) => [r.name, r.tags, r.scanned, r.error]),
      [
        ['apps/app', 6, true, null],
        ['apps/other', 2, true, null],
        ['apps/paused', 0, false, null],
      ],
    );
    assert.equal(reports[0]!.anomalies.length, 0);

    const tags = await pawl(['tags', 'app', '--state-dir', stateDir]);
    assert.equal(tags.code, 0, tags.stderr);
    assert.deepEqual(tags.stdout.trim().split('\n'), ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '2.0.0', 'latest']);

    await deleteTag(registry.url, 'team/app', '1.1.0');
    await deleteTag(registry.url, 'team/app', '1.2.0');
    await pushTags(registry.url, 'team/app', ['2.1.0']);
    const second = await pawl(['scan', 'apps/app', '-c', configDir, '--state-dir', stateDir]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /^NAME\s+TAGS\s+ADDED\s+REMOVED\s+ANOMALIES\s+ERROR$/m);
    assert.match(second.stdout, /^apps\/app\s+5\s+1\s+2\s+tags-missing \(2\)$/m);

    const history = await pawl(['tags', 'apps/app', '--history', '-c', configDir, '--state-dir', stateDir]);
    assert.equal(history.code, 0, history.stderr);
    const lines = history.stdout.trim().split('\n');
    assert.match(lines[0]!, /^STARTED\s+OUTCOME\s+TAGS\s+REQUESTS\s+ADDED\s+REMOVED\s+ANOMALIES \/ ERROR$/);
    assert.match(lines[1]!, /\sok\s+5\s+\d+\s+\+1: 2\.1\.0\s+-2: 1\.1\.0, 1\.2\.0\s+tags-missing \(2\)$/);
    assert.match(lines[2]!, /\sok\s+6\s+\d+\s+\+6: 1\.0\.0, 1\.1\.0/);

    const json = await pawl(['tags', 'app', '--history', '--json', '--state-dir', stateDir]);
    const scans = (
      JSON.parse(json.stdout) as { scans: { removed: string[]; anomalies: JsonReport['anomalies'] }[] }
    ).scans;
    assert.deepEqual(scans[0]!.removed, ['1.1.0', '1.2.0']);
    assert.deepEqual(scans[0]!.anomalies, [{ kind: 'tags-missing', count: 2, tags: ['1.1.0', '1.2.0'] }]);

    // Page size 3 through the proxy: 7 tags (.sig included) → 3 pages, then 6 → 2; each page recorded.
    const raw = await pawl(['tags', 'app', '--raw', '--limit', '2', '--json', '--state-dir', stateDir]);
    const rawScans = (
      JSON.parse(raw.stdout) as { scans: { responses: { url: string; status: number; body: string }[] }[] }
    ).scans;
    const listings = rawScans.map((s) =>
      s.responses.filter((r) => r.url.includes('/tags/list') && r.status === 200),
    );
    assert.deepEqual(
      listings.map((l) => l.length),
      [2, 3],
    );
    assert.ok(
      listings[1]!.some((r) => r.body.includes('2.0.0.sig')),
      'raw responses show what the registry said, before exclusionList',
    );
    const text = await pawl(['tags', 'app', '--raw', '--limit', '1', '--state-dir', stateDir]);
    assert.match(text.stdout, /^# scan \d+ at .* \(ok\)$/m);
    assert.match(text.stdout, /^GET http:\/\/127\.0\.0\.1:\d+\/v2\/team\/app\/tags\/list\S* → 200 /m);
  });

  test('a failing registry: exit 1, the error is shown, the previous tags stay', async () => {
    proxy.addFault({ kind: 'tags', repo: 'team/app', page: 2, times: Infinity, action: { status: 503 } });
    const r = await pawl(['scan', 'app', '-c', configDir, '--state-dir', stateDir, '--json']);
    proxy.clearFaults();
    assert.equal(r.code, 1, r.stdout);
    const report = (JSON.parse(r.stdout) as { repositories: JsonReport[] }).repositories[0]!;
    assert.equal(report.scanned, false);
    assert.match(report.error ?? '', /503/);
    assert.ok(report.tags > 0);
    const tags = await pawl(['tags', 'app', '--state-dir', stateDir]);
    assert.equal(tags.code, 0);
    assert.match(tags.stderr, /the last scan of apps\/app .* failed/);
    assert.ok(tags.stdout.includes('2.1.0'));
  });

  test('unknown names are a usage error with a suggestion', async () => {
    const r = await pawl(['scan', 'ap', '-c', configDir, '--state-dir', stateDir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no ImageRepository named "ap".*did you mean/);
  });
});

describe('credentials never reach the state or the output', () => {
  for (const [auth, secretType] of [
    ['htpasswd', 'dockerconfigjson'],
    ['token', 'dockerconfigjson'],
    ['htpasswd', 'basic-auth'],
    ['token', 'basic-auth'],
  ] as const) {
    test(`${auth}, ${secretType} Secret: scan, tags, history, raw; then search the state directory and the output for the password${auth === 'token' ? ' and the tokens' : ''}`, async () => {
      const password = `pawl-${auth}-s3cret-Zq9`;
      const registry = await startRegistry({ auth, users: { alice: password } });
      cleanups.push(() => registry.stop());
      await pushTags(registry.url, 'team/secure', ['1.0.0', '1.1.0'], {
        auth: { username: 'alice', password },
      });
      const configDir = await tempDir('pawl-scan-config-');
      const stateDir = await tempDir('pawl-scan-state-');
      await writeFile(
        join(configDir, 'repos.yaml'),
        imageRepository('secure', `${registry.host}/team/secure`, '  secretRef:\n    name: regcred\n') +
          `apiVersion: v1
kind: Secret
metadata:
  name: regcred
  namespace: apps
${
  secretType === 'basic-auth'
    ? `type: kubernetes.io/basic-auth
stringData:
  username: alice
  password: ${password}
`
    : `type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"${registry.host}": {"username": "alice", "password": "${password}"}}}'
`
}`,
      );
      const outputs: string[] = [];
      const scan = await pawl(['scan', '-c', configDir, '--state-dir', stateDir, '--log-level', 'debug']);
      outputs.push(scan.stdout, scan.stderr);
      assert.equal(scan.code, 0, scan.stderr);
      assert.match(scan.stdout, /apps\/secure\s+2\s/);
      for (const args of [[], ['--history'], ['--raw'], ['--raw', '--json'], ['--wide', '--json']]) {
        const r = await pawl(['tags', 'secure', '--state-dir', stateDir, '--log-level', 'debug', ...args]);
        assert.equal(r.code, 0, r.stderr);
        outputs.push(r.stdout, r.stderr);
      }
      // The raw responses are there (a 401 challenge and the listing), only without credentials.
      const raw = outputs.at(-4) ?? '';
      assert.match(raw, /tags\/list/);
      const secrets = [password, Buffer.from(`alice:${password}`).toString('base64')];
      if (auth === 'token') {
        const issued = registry.tokenServer!.issued;
        assert.ok(issued.length > 0, 'the scan used a token');
        // A JWT's signature alone is secret enough to look for, as is the whole token.
        for (const tok of issued) secrets.push(tok, tok.split('.').at(-1)!);
      }
      for (const text of outputs) {
        for (const secret of secrets)
          assert.ok(!text.includes(secret), `a credential in CLI output: ${text.slice(0, 200)}`);
      }
      // The database, its WAL and shared memory, if left: every byte of every file.
      const files = await readdir(stateDir);
      assert.ok(files.includes('pawl.db'));
      for (const f of files) {
        const bytes = await readFile(join(stateDir, f));
        for (const secret of secrets) assert.ok(!bytes.includes(secret), `a credential in ${f}`);
      }
    });
  }
});

describe('usage and empty states', () => {
  test('no ImageRepository: nothing to scan, exit 0; bad --concurrency: exit 2', async () => {
    const configDir = await tempDir('pawl-scan-config-');
    const stateDir = await tempDir('pawl-scan-state-');
    // Another kind's object: nothing for pawl, and (unlike an empty file) nothing to warn about.
    await writeFile(join(configDir, 'other.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n');
    const r = await pawl(['scan', '-c', configDir, '--state-dir', stateDir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { repositories: [], problems: [], skipped: [] });
    const bad = await pawl(['scan', '-c', configDir, '--state-dir', stateDir, '--concurrency', '0']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--concurrency must be a positive whole number/);
  });

  test('pawl tags with an empty state says what to do; --history with --raw is a usage error', async () => {
    const stateDir = await tempDir('pawl-scan-state-');
    const r = await pawl(['tags', 'app', '--state-dir', stateDir]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no scans in .* yet; run "pawl scan" first/);
    assert.deepEqual(await readdir(stateDir), [], 'a read-only command creates no database');
    const both = await pawl(['tags', 'app', '--history', '--raw', '--state-dir', stateDir]);
    assert.equal(both.code, 2);
  });
});
