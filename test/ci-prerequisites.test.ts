/**
 * Under CI=true, what the suites need must be there: a suite that skips itself for want of it
 * (the SSH suite when not root, the registry tests without docker-registry) would otherwise let
 * CI go green without running. scripts/test.sh also fails CI on any skipped test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { access, constants } from 'node:fs/promises';
import { sshAvailable } from './helpers/sshd.js';
import { postgresUnavailable } from './helpers/postgres.js';

const CI = process.env.CI === 'true';

test(
  'CI has every prerequisite of the integration suites',
  { skip: !CI && 'only checked under CI=true' },
  async () => {
    assert.equal(await sshAvailable(), null, 'the SSH suites need sshd and root');
    assert.equal(postgresUnavailable(), null, 'the PostgreSQL store suites need PostgreSQL');
    for (const bin of [
      process.env.PAWL_REGISTRY_BIN ?? '/usr/bin/docker-registry',
      '/usr/bin/git',
      '/usr/bin/ssh-keygen',
      '/usr/bin/htpasswd',
      '/usr/bin/gpg',
    ]) {
      await access(bin, constants.X_OK).catch(() =>
        assert.fail(`${bin} is missing; scripts/install-deps.sh installs it`),
      );
    }
  },
);
