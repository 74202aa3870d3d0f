/**
 * The state directory's Secret prints (src/run/secret-prints.ts) as a daemon's passes share them:
 * written one version at a time however many passes record at once, read again only when another
 * process wrote the file, and not written when no print changed.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyConfig, type Config, type ImageRepository, type Secret } from '../../src/config/index.js';
import { SecretPrints, secretChanged, secretPrint } from '../../src/run/secret-prints.js';

const repo = (name: string, secretRef?: string): ImageRepository =>
  ({
    metadata: { namespace: 'flux-system', name },
    spec: secretRef ? { secretRef } : {},
  }) as unknown as ImageRepository;

function configWith(password: string): Config {
  const config = emptyConfig();
  config.secrets.set('flux-system/regcred', {
    data: { username: Buffer.from('bob'), password: Buffer.from(password) },
  } as unknown as Secret);
  return config;
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-prints-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const FILE = 'secret-prints.json';

test('passes recording at once leave one whole file with every print, and no temporary file', async () => {
  await withDir(async (dir) => {
    const config = configWith('first');
    // The first version written is put in place last of all, if others are written meanwhile: the
    // file must still end with every print (the versions are written one after another).
    let renamed = 0;
    let release = (): void => undefined;
    const first = new Promise<void>((resolve) => {
      release = resolve;
      setTimeout(resolve, 300);
    });
    const prints = new SecretPrints(dir, {
      rename: async (from, to) => {
        if (++renamed === 1) await first;
        await rename(from, to);
        if (renamed === 40) release();
      },
    });
    const repos = Array.from({ length: 40 }, (_, i) => repo(`app-${i}`, 'regcred'));
    // Forty passes, each recording its own repository, all at once.
    await Promise.all(repos.map((r) => prints.record([r], config)));
    const onDisk = JSON.parse(await readFile(join(dir, FILE), 'utf8')) as Record<string, string>;
    assert.equal(Object.keys(onDisk).length, 40);
    for (const r of repos) assert.equal(onDisk[`flux-system/${r.metadata.name}`], secretPrint(config, r));
    assert.deepEqual(await readdir(dir), [FILE]);
    // A process started afresh reads them all.
    assert.equal((await new SecretPrints(dir).read()).size, 40);
  });
});

test('a changed Secret is seen against the recorded print; an unchanged one, and an unrecorded repository, are not', async () => {
  await withDir(async (dir) => {
    const prints = new SecretPrints(dir);
    const web = repo('web', 'regcred');
    await prints.record([web], configWith('old'));
    const read = await prints.read();
    assert.equal(secretChanged(read, configWith('old'), web), false);
    assert.equal(secretChanged(read, configWith('fixed'), web), true);
    assert.equal(secretChanged(read, configWith('fixed'), repo('never-scanned', 'regcred')), false);
  });
});

test('nothing changed: the file is not written again', async () => {
  await withDir(async (dir) => {
    const prints = new SecretPrints(dir);
    const config = configWith('first');
    await prints.record([repo('a', 'regcred'), repo('b')], config);
    const first = await stat(join(dir, FILE));
    await prints.record([repo('a', 'regcred'), repo('b')], config);
    const again = await stat(join(dir, FILE));
    // Every write is a new file renamed into place: the same inode is the same write.
    assert.equal(again.ino, first.ino);
    await prints.record([repo('a', 'regcred')], configWith('second'));
    assert.notEqual((await stat(join(dir, FILE))).ino, first.ino);
  });
});

test("another process's write is read; what this one held is not written over it unread", async () => {
  await withDir(async (dir) => {
    const prints = new SecretPrints(dir);
    const config = configWith('first');
    await prints.record([repo('a', 'regcred')], config);
    // `pawl run` on the same state directory records another repository.
    const other = new SecretPrints(dir);
    await other.record([repo('b', 'regcred')], config);
    assert.deepEqual([...(await prints.read()).keys()].sort(), ['flux-system/a', 'flux-system/b']);
    await prints.record([repo('c', 'regcred')], config);
    const onDisk = JSON.parse(await readFile(join(dir, FILE), 'utf8')) as Record<string, string>;
    assert.deepEqual(Object.keys(onDisk).sort(), ['flux-system/a', 'flux-system/b', 'flux-system/c']);
  });
});

test('an unreadable file holds no prints, and the next record writes a whole one', async () => {
  await withDir(async (dir) => {
    for (const text of ['{"flux-system/a": "x"', '[1, 2]', 'null', '{"flux-system/a": 3}']) {
      await writeFile(join(dir, FILE), text);
      const prints = new SecretPrints(dir);
      assert.equal((await prints.read()).size, 0, text);
      await prints.record([repo('b', 'regcred')], configWith('first'));
      assert.deepEqual(Object.keys(JSON.parse(await readFile(join(dir, FILE), 'utf8')) as object), [
        'flux-system/b',
      ]);
    }
  });
});
