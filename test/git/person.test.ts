/** Who asks for a rollback, found the way `git commit` finds an author (src/git/person.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPerson, parseIdentity } from '../../src/git/index.js';
import { UsageError } from '../../src/util/index.js';

test('parseIdentity reads `Name <email>` and nothing else', () => {
  assert.deepEqual(parseIdentity('Dana Dev <dana@example.com>'), {
    name: 'Dana Dev',
    email: 'dana@example.com',
  });
  assert.deepEqual(parseIdentity('  Ümit  <u@x.org> '), { name: 'Ümit', email: 'u@x.org' });
  for (const bad of ['Dana Dev', '<dana@example.com>', 'Dana <>', 'Dana <a b@c>', 'A <b> <c>', 'A\nB <c@d>'])
    assert.equal(parseIdentity(bad), null, bad);
});

test('findPerson: --author, then GIT_AUTHOR_NAME/EMAIL, then git config, else nobody', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'pawl-person-'));
  t.after(() => rm(home, { recursive: true, force: true }));
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_GLOBAL: join(home, 'gitconfig'),
    GIT_CONFIG_NOSYSTEM: '1',
  };
  assert.equal(await findPerson({ env, cwd: home }), null);
  await writeFile(join(home, 'gitconfig'), '[user]\n\tname = From Config\n\temail = config@example.com\n');
  assert.deepEqual(await findPerson({ env, cwd: home }), {
    identity: { name: 'From Config', email: 'config@example.com' },
    from: 'git config',
  });
  const withEnv = { ...env, GIT_AUTHOR_NAME: 'From Env', GIT_AUTHOR_EMAIL: 'env@example.com' };
  assert.equal((await findPerson({ env: withEnv, cwd: home }))?.from, 'GIT_AUTHOR_NAME');
  assert.deepEqual(await findPerson({ author: 'Given <given@example.com>', env: withEnv, cwd: home }), {
    identity: { name: 'Given', email: 'given@example.com' },
    from: '--author',
  });
  await assert.rejects(findPerson({ author: 'nobody', env, cwd: home }), UsageError);
});
