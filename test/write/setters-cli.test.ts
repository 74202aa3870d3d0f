import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const temps: string[] = [];
after(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

function pawl(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(repo, 'src', 'cli', 'main.ts'), ...args], {
    encoding: 'utf8',
    cwd: repo,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'pawl-setters-cli-'));
  temps.push(root);
  for (const [p, t] of Object.entries(files)) await writeFile(join(root, p), t);
  return root;
}

const marked =
  'image: app:1.0.0 # {"$imagepolicy": "apps:app"}\ntag: 1.0.0 # {"$imagepolicy": "apps:app:tag"}\n';

test('pawl setters apply prints each change and writes it', async () => {
  const root = await tree({ 'a.yaml': marked });
  const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:1.10');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'a.yaml:1 apps:app app:1.0.0 -> app:1.10\na.yaml:2 apps:app:tag 1.0.0 -> 1.10\n');
  assert.equal(
    await readFile(join(root, 'a.yaml'), 'utf8'),
    marked.replace('app:1.0.0', 'app:1.10').replace('tag: 1.0.0', 'tag: "1.10"'),
  );
  const again = pawl('setters', 'apply', root, '--image', 'apps:app=app:1.10');
  assert.equal(again.stdout, 'no changes\n');
});

test('--json and --dry-run', async () => {
  const root = await tree({ 'a.yaml': marked });
  const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:2.0.0@sha256:abc', '--dry-run', '--json');
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    changes: { file: string; line: number; setter: string; policy: string; old: string; new: string }[];
    errors: unknown[];
  };
  assert.deepEqual(out.changes[0], {
    file: 'a.yaml',
    line: 1,
    setter: 'apps:app',
    policy: 'apps/app',
    old: 'app:1.0.0',
    new: 'app:2.0.0@sha256:abc',
  });
  assert.deepEqual(out.errors, []);
  assert.equal(await readFile(join(root, 'a.yaml'), 'utf8'), marked);
});

test('exit 1 naming the file that does not parse; nothing written', async () => {
  const root = await tree({ 'a.yaml': marked, 'b.yaml': 'x: [1 # {"$imagepolicy": "apps:app"}\ny: 2\n' });
  const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:2');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /b\.yaml: not valid YAML/);
  assert.equal(await readFile(join(root, 'a.yaml'), 'utf8'), marked);
});

test('exit 2 for a malformed --image', async () => {
  const root = await tree({ 'a.yaml': marked });
  for (const bad of [
    'apps/app=app:1',
    'apps:app=app',
    'apps:app',
    'apps:app=app:.hidden',
    'apps:app=app:a\nb: c',
  ]) {
    const r = pawl('setters', 'apply', root, '--image', bad);
    assert.equal(r.status, 2, bad);
    assert.match(r.stderr, /--image/);
  }
  assert.equal(await readFile(join(root, 'a.yaml'), 'utf8'), marked);
  const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:-x');
  assert.match(r.stderr, /"-x" is not a tag; a tag is 1 to 128 characters/);
});
