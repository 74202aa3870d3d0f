/**
 * Real files of each encoding through `pawl setters apply` and `pawl run`: UTF-8 (with a BOM and
 * CRLF) is edited byte-exactly; a marked file that is not UTF-8 (Latin-1, Windows-1252,
 * Shift_JIS) is refused — "not UTF-8, left untouched" — and no byte of it changes; UTF-16 holds
 * no marker pawl can read and is not touched either.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pushTags } from '../helpers/push.js';
import { ROOT, gitObjects, imageObjects, startWorld } from '../helpers/world.js';
import type { RunReport } from '../../src/run/report.js';

const temps: string[] = [];
after(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});

function pawl(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts'), ...args], {
    encoding: 'utf8',
    cwd: ROOT,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function tree(files: Record<string, Buffer>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'pawl-encodings-'));
  temps.push(root);
  for (const [p, bytes] of Object.entries(files)) await writeFile(join(root, p), bytes);
  return root;
}

const MARKED = 'image: app:1.0.0 # {"$imagepolicy": "apps:app"}\n';

/** `# café` in the encoding's bytes, then a marked line (ASCII, the same in all of them). */
const LEGACY: Record<string, Buffer> = {
  'latin1.yaml': Buffer.concat([Buffer.from('# caf'), Buffer.from([0xe9]), Buffer.from('\n' + MARKED)]),
  'cp1252.yaml': Buffer.concat([
    Buffer.from('# '),
    Buffer.from([0x93]),
    Buffer.from('quoted'),
    Buffer.from([0x94]),
    Buffer.from('\n' + MARKED),
  ]),
  // 日本 in Shift_JIS
  'sjis.yaml': Buffer.concat([
    Buffer.from('# '),
    Buffer.from([0x93, 0xfa, 0x96, 0x7b]),
    Buffer.from('\n' + MARKED),
  ]),
  // An invalid byte inside the marked line itself.
  'in-value.yaml': Buffer.concat([
    Buffer.from('image: app:1.0.0 # {"$imagepolicy": "apps:app"} '),
    Buffer.from([0xff]),
    Buffer.from('\n'),
  ]),
};

describe('pawl setters apply on files of each encoding', () => {
  for (const [name, bytes] of Object.entries(LEGACY)) {
    test(`${name}: refused, "not UTF-8, left untouched", no byte changed`, async () => {
      const root = await tree({ [name]: bytes });
      const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:2.0.0');
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`${name.replace('.', '\\.')}: not UTF-8, left untouched`));
      assert.deepEqual(await readFile(join(root, name)), bytes);
    });
  }

  test('UTF-8 with a BOM, CRLF and non-ASCII text: only the marked bytes change', async () => {
    const text = '\uFEFF# café 日本\r\nimage: app:1.0.0 # {"$imagepolicy": "apps:app"}\r\nnote: "ü"\r\n';
    const root = await tree({ 'utf8.yaml': Buffer.from(text, 'utf8') });
    const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:2.0.0');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      await readFile(join(root, 'utf8.yaml')),
      Buffer.from(text.replace('app:1.0.0', 'app:2.0.0'), 'utf8'),
    );
  });

  test('UTF-16 (BOM, little endian): no readable marker, not touched', async () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(MARKED, 'utf16le')]);
    const root = await tree({ 'utf16.yaml': bytes });
    const r = pawl('setters', 'apply', root, '--image', 'apps:app=app:2.0.0', '--json');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as { changes: unknown[] }).changes, []);
    assert.deepEqual(await readFile(join(root, 'utf16.yaml')), bytes);
  });
});

describe('pawl run with a Latin-1 file', () => {
  test('the automation fails naming the file; nothing is committed; the file keeps its bytes', async () => {
    const w = await startWorld({
      files: { 'ok.yaml': 'image: {{REGISTRY}}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n' },
      config: {
        'git.yaml': gitObjects(),
        'app.yaml': imageObjects('app', '{{REGISTRY}}/org/app', 'semver:\n  range: ">=1.0.0"'),
      },
    });
    try {
      const latin1 = Buffer.concat([
        Buffer.from('# caf'),
        Buffer.from([0xe9]),
        Buffer.from(`\nimage: ${w.registryHost}/org/app:1.0.0 # {"$imagepolicy": "flux-system:app"}\n`),
      ]);
      await w.git.commitFiles(w.repoName, 'main', { 'latin1.yaml': latin1 });
      const blob = await w.git.revParse(w.repoName, 'main:latin1.yaml');
      const head = await w.git.revParse(w.repoName, 'refs/heads/main');
      await pushTags(w.registry.url, 'org/app', ['1.0.0', '1.1.0']);
      const { json, code } = await w.pawlJson<RunReport>(['run']);
      assert.equal(code, 1);
      const a = json.automations[0]!;
      assert.equal(a.result, 'failed');
      assert.match(a.error ?? '', /latin1\.yaml: not UTF-8, left untouched/);
      assert.equal(await w.git.revParse(w.repoName, 'refs/heads/main'), head, 'nothing pushed');
      assert.equal(await w.git.revParse(w.repoName, 'main:latin1.yaml'), blob);
    } finally {
      await w.close();
    }
  });
});
