/**
 * Careless input (issue 22): empty, truncated and garbage files, oversized documents and files,
 * and user text that would split an output line.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { loadConfig, loadedNothing, objectCount } from '../../src/config/index.js';
import { POLICY, REPO, VALID, configDir } from './fixtures.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  /** Peak resident set of the child in KiB, when /usr/bin/time is there to tell. */
  maxRssKiB: number | null;
}

/**
 * `pawl ARGS` in a child whose V8 heap is capped: a loader that reads a huge file into a string
 * and parses it dies instead of passing.
 */
function pawl(args: string[], heapMiB = 0): Promise<Ran> {
  const node = [
    ...(heapMiB ? [`--max-old-space-size=${heapMiB}`] : []),
    '--import',
    'tsx',
    join(ROOT, 'src/cli/main.ts'),
    ...args,
  ];
  const timed = heapMiB > 0 && existsSync('/usr/bin/time');
  const [cmd, argv] = timed
    ? ['/usr/bin/time', ['-f', 'MAXRSS %M', process.execPath, ...node]]
    : [process.execPath, node];
  return new Promise((resolve) => {
    execFile(
      cmd as string,
      argv as string[],
      { cwd: ROOT, env: { ...process.env, PAWL_LOG_LEVEL: 'silent' }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        const m = /MAXRSS (\d+)/.exec(stderr);
        resolve({ code, stdout, stderr, maxRssKiB: m ? Number(m[1]) : null });
      },
    );
  });
}

async function inDir<T>(files: Record<string, string>, fn: (dir: string) => Promise<T>): Promise<T> {
  const { dir, cleanup } = await configDir(files);
  try {
    return await fn(dir);
  } finally {
    await cleanup();
  }
}

/** A file of `bytes` bytes holding an ImagePolicy whose annotation is one huge scalar. */
async function hugeScalarFile(file: string, bytes: number): Promise<void> {
  const head = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: huge
  namespace: apps
  annotations:
    note: "`;
  const tail = `"
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: ">=1.0.0"
`;
  const f = await open(file, 'w');
  try {
    await f.write(head);
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    let left = bytes - head.length - tail.length;
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      await f.write(chunk, 0, n);
      left -= n;
    }
    await f.write(tail);
  } finally {
    await f.close();
  }
}

describe('validate: a configuration with nothing pawl knows', { concurrency: 4 }, () => {
  const cases: [string, string | Buffer][] = [
    ['an empty file', ''],
    ['a file of comments and document markers', '# nothing yet\n---\n---\n'],
    ['a truncated file', 'apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePol'],
    ['a garbage file', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe])],
    ['a file of prose', 'hello world, this is not a configuration\n'],
  ];
  for (const [name, content] of cases) {
    test(`${name}: exit 2, naming the file`, async () => {
      await inDir({}, async (dir) => {
        const file = join(dir, 'pawl.yaml');
        await writeFile(file, content);
        const r = await pawl(['validate', '-c', file]);
        assert.equal(r.code, 2, r.stdout + r.stderr);
        const line = r.stdout.split('\n').find((l) => l.startsWith(`${file}: `));
        assert.ok(line, `a line names ${file}:\n${r.stdout}`);
        assert.match(r.stdout, /no object pawl knows/);
        assert.match(r.stdout, /^invalid: 1 error, \d+ warnings?; usable: no objects$/m);
      });
    });
  }

  test('a directory where one file has nothing: a warning naming it; the rest is valid', async () => {
    await inDir({ 'apps.yaml': VALID, 'empty.yaml': '', 'notes.yaml': 'just some words\n' }, async (dir) => {
      const r = await pawl(['validate', '-c', dir]);
      assert.equal(r.code, 0, r.stdout);
      assert.match(r.stdout, new RegExp(`^${join(dir, 'empty.yaml')}: warning: is empty`, 'm'));
      assert.match(r.stdout, new RegExp(`^${join(dir, 'notes.yaml')}: warning: holds no YAML mapping`, 'm'));
      assert.doesNotMatch(r.stdout, new RegExp(`${join(dir, 'apps.yaml')}: warning`));
      assert.match(r.stdout, /^valid: .*ImagePolicy/m);
    });
  });

  test('loadedNothing and objectCount tell a daemon that a reload would remove everything', async () => {
    await inDir({ 'apps.yaml': VALID, 'empty.yaml': '' }, async (dir) => {
      const full = await loadConfig([dir]);
      assert.equal(loadedNothing(full), false);
      assert.ok(objectCount(full.config) >= 3);
      const empty = await loadConfig([join(dir, 'empty.yaml')]);
      assert.equal(loadedNothing(empty), true);
      assert.equal(objectCount(empty.config), 0);
    });
  });
});

describe('size limits', { concurrency: 2 }, () => {
  test('a 50 MB scalar: a clear error naming the file, memory bounded; other files still load', async () => {
    await inDir({ 'good.yaml': VALID }, async (dir) => {
      const big = join(dir, 'big.yaml');
      await hugeScalarFile(big, 50 * 1024 * 1024);
      const r = await pawl(['validate', '-c', dir], 192);
      assert.equal(r.code, 2, r.stdout + r.stderr.slice(0, 2000));
      assert.match(
        r.stdout,
        new RegExp(`^${big}: is 50\\.0 MiB, over pawl's limit of 16 MiB per file; not read`, 'm'),
      );
      // The good file's objects are there.
      assert.match(
        r.stdout,
        /^invalid: .*; usable: 1 ImageRepository, 1 ImagePolicy, 1 ImageUpdateAutomation/m,
      );
      if (r.maxRssKiB !== null) assert.ok(r.maxRssKiB < 400 * 1024, `peak RSS ${r.maxRssKiB} KiB`);
    });
  });

  test('a file under the limit is parsed only where it names pawl’s kinds: memory follows pawl’s objects', async () => {
    // 14 MB of CRD-like mappings around one ImageRepository with a block scalar (which sends the
    // file to the yaml library): parsed whole, that took 590 MB and two minutes.
    const props = Array.from(
      { length: 200 },
      (_, j) => `      p${j}:\n        type: string\n        description: d${j}\n`,
    ).join('');
    const parts = [`${REPO}  x: |\n    y\n`];
    for (let i = 0; i < 1200; i++)
      parts.push(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n  props:\n${props}`);
    await inDir({ 'big.yaml': parts.join('---\n') }, async (dir) => {
      const r = await pawl(['validate', '-c', dir], 192);
      assert.equal(r.code, 0, r.stdout + r.stderr.slice(0, 2000));
      assert.match(r.stdout, /^valid: 1 ImageRepository; 0 errors, 1 warning/m);
      if (r.maxRssKiB !== null) assert.ok(r.maxRssKiB < 400 * 1024, `peak RSS ${r.maxRssKiB} KiB`);
    });
  });

  test('an oversized document is skipped with its index and line; the file’s other documents load', async () => {
    await inDir({}, async (dir) => {
      const part = join(dir, 'part.yaml');
      await hugeScalarFile(part, 3 * 1024 * 1024);
      const { readFile } = await import('node:fs/promises');
      const huge = await readFile(part, 'utf8');
      const file = join(dir, 'apps.yaml');
      await writeFile(file, `${REPO}---\n${huge}---\n${POLICY}`);
      const hugeLine = REPO.split('\n').length + 1;
      const { config, problems, skipped } = await loadConfig([file]);
      const err = problems.find((p) => p.severity === 'error');
      assert.ok(err);
      assert.equal(err.location.file, file);
      assert.equal(err.location.line, hugeLine);
      assert.equal(err.object, 'ImagePolicy apps/huge');
      assert.match(err.message, /^document 2 is 3\.0 MiB, over pawl's limit of 1 MiB per document; not read/);
      assert.ok(config.imageRepositories.has('apps/app'));
      assert.ok(config.imagePolicies.has('apps/app'));
      assert.deepEqual(
        skipped.map((s) => `${s.kind} ${s.namespace}/${s.name}`),
        ['ImagePolicy apps/huge'],
      );
      // The policy after the big document keeps its own line.
      assert.equal(config.imagePolicies.get('apps/app')!.source.line, hugeLine + huge.split('\n').length);
    });
  });

  test('an oversized document of another kind is a warning only', async () => {
    const crd = `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\nspec:\n  description: "${'y'.repeat(1100 * 1024)}"\n`;
    await inDir({ 'apps.yaml': `${VALID}---\n${crd}` }, async (dir) => {
      const { problems, config } = await loadConfig([dir]);
      assert.deepEqual(
        problems.filter((p) => p.severity === 'error'),
        [],
      );
      assert.ok(
        problems.some((p) => p.severity === 'warning' && /over pawl's limit of 1 MiB/.test(p.message)),
      );
      assert.ok(config.imagePolicies.has('apps/app'));
    });
  });

  test('kustomize output over the limit is an error naming the kustomization', async () => {
    await inDir({ 'k/kustomization.yaml': 'resources: []\n', 'apps.yaml': VALID }, async (dir) => {
      const { problems, config } = await loadConfig([dir], {
        kustomize: () =>
          Promise.resolve({ ok: true, stdout: `${REPO}---\n${'#'.repeat(2048)}\n`, stderr: '' }),
        limits: { fileBytes: 1024, documentBytes: 1024, buildBytes: 1024 },
      });
      const err = problems.find((p) => p.severity === 'error');
      assert.ok(err, JSON.stringify(problems));
      assert.equal(err.location.file, join(dir, 'k', 'kustomization.yaml'));
      assert.match(err.message, /kustomize built .* over pawl's limit of 1 KiB per build; not read/);
      assert.ok(config.imagePolicies.size === 0 || config.imagePolicies.has('apps/app'));
    });
  });

  test('a --secrets-dir file over the limit is an error naming it; its value is not read', async () => {
    const withSecret = REPO.replace('interval: 5m', 'interval: 5m\n  secretRef:\n    name: regcred');
    await inDir({ 'apps.yaml': `${withSecret}---\n${POLICY}` }, async (dir) => {
      const secrets = join(dir, 'secrets');
      await mkdir(join(secrets, 'apps', 'regcred'), { recursive: true });
      await writeFile(join(secrets, 'apps', 'regcred', '.dockerconfigjson'), 'z'.repeat(2 * 1024 * 1024));
      const { problems } = await loadConfig([join(dir, 'apps.yaml')], { secrets: { dir: secrets } });
      const err = problems.find(
        (p) => p.location.file === join(secrets, 'apps', 'regcred', '.dockerconfigjson'),
      );
      assert.ok(err, JSON.stringify(problems, null, 1));
      assert.equal(err.severity, 'error');
      assert.match(err.message, /over pawl's limit of 1 MiB per Secret key; not read/);
      assert.ok(!problems.some((p) => p.message.includes('zzzz')));
    });
  });
});

describe('text output escapes user text', () => {
  test('a name with a newline is printed on one line; --json keeps it exact', async () => {
    const odd = 'app\nforged: line';
    const text = REPO.replace('name: app\n', `name: ${JSON.stringify(odd)}\n`).replace(
      'interval: 5m',
      'interval: 5m\n  secretRef:\n    name: "missing\\u001b[31m"',
    );
    await inDir({ 'apps.yaml': text }, async (dir) => {
      const r = await pawl(['validate', '-c', dir]);
      assert.equal(r.code, 2);
      // The summary counts kinds; the lines about the object are the ones to check.
      const lines = r.stdout
        .split('\n')
        .filter((l) => l.includes('ImageRepository') && !l.startsWith('invalid:'));
      assert.ok(lines.length > 0, r.stdout);
      for (const l of lines) {
        assert.ok(l.includes('apps/app\\nforged: line'), l);
        assert.ok(!l.includes('\u001b'), 'no raw escape character');
      }
      assert.ok(!r.stdout.split('\n').some((l) => l.startsWith('forged')), r.stdout);
      const j = await pawl(['validate', '-c', dir, '--json']);
      const out = JSON.parse(j.stdout) as { problems: { object: string | null }[] };
      assert.ok(out.problems.some((p) => p.object === `ImageRepository apps/${odd}`));
    });
  });

  test('a file name with a newline is printed escaped', async () => {
    await inDir({ 'a\nb.yaml': '' }, async (dir) => {
      const r = await pawl(['validate', '-c', dir]);
      assert.ok(r.stdout.includes(`${dir}/a\\nb.yaml: warning: is empty`), r.stdout);
    });
  });
});
