import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyFailure, cleanStderr, git, GitError, redact } from '../../src/git/exec.js';
import { checkAuthSecret, credentialsInUrl, transportOf } from '../../src/git/auth.js';
import { remoteUrl } from '../../src/git/workspace.js';
import { chooseRef, selectSemverTag } from '../../src/git/refs.js';
import { classifyRejection, parsePorcelain } from '../../src/git/push.js';
import { trailerArgs } from '../../src/git/commit.js';
import { secret } from './fixtures.js';

describe('redaction', () => {
  test('URL userinfo, auth headers, known token shapes and given secrets', () => {
    assert.equal(
      redact("fatal: unable to access 'https://alice:pw@example.com/r.git/'"),
      "fatal: unable to access 'https://***@example.com/r.git/'",
    );
    assert.equal(redact('Authorization: Bearer abc.def'), 'Authorization: Bearer ***');
    assert.equal(redact('token ghp_abcdefghijklmnopqrstuvwxyz0123'), 'token ***');
    assert.equal(redact('glpat-abcdefghijklmnopqrstu is bad'), '*** is bad');
    assert.equal(redact('the value s3cr3t-value leaked', ['s3cr3t-value']), 'the value *** leaked');
  });

  test('stderr is cleaned of hints and progress', () => {
    const raw =
      "remote: Counting objects: 3\nhint: do this\nfatal: Authentication failed for 'https://u:p@h/r'\n";
    assert.equal(cleanStderr(raw), "fatal: Authentication failed for 'https://***@h/r'");
  });

  test('failures are classified from the message', () => {
    assert.equal(classifyFailure("fatal: Authentication failed for 'http://127.0.0.1/r.git/'"), 'auth');
    assert.equal(classifyFailure('git@github.com: Permission denied (publickey).'), 'auth');
    assert.equal(classifyFailure('Host key verification failed.'), 'auth');
    assert.equal(
      classifyFailure(
        "fatal: unable to access 'http://127.0.0.1:1/r.git/': Failed to connect to 127.0.0.1 port 1",
      ),
      'unreachable',
    );
    assert.equal(
      classifyFailure(
        "fatal: unable to access 'https://nope.invalid/': Could not resolve host: nope.invalid",
      ),
      'unreachable',
    );
    assert.equal(classifyFailure("fatal: repository 'http://x/r.git/' not found"), 'not-found');
    assert.equal(classifyFailure('error: something else'), 'other');
  });

  test('GitError carries a redacted command and the exit code', async () => {
    await assert.rejects(
      git(['rev-parse', '--verify', 'https://u:pw@example.com'], { cwd: '/' }),
      (err: unknown) => {
        assert.ok(err instanceof GitError);
        assert.equal(err.exitCode, 1, 'exit code of the pawl process (RuntimeError)');
        assert.equal(err.gitExitCode, 128);
        assert.ok(!err.command.includes('pw'));
        assert.ok(!err.message.includes(':pw@'));
        return true;
      },
    );
  });
});

describe('auth', () => {
  test('transports', () => {
    assert.equal(transportOf('https://github.com/o/r'), 'https');
    assert.equal(transportOf('http://127.0.0.1:8080/r.git'), 'http');
    assert.equal(transportOf('ssh://git@github.com/o/r'), 'ssh');
    assert.equal(transportOf('git@github.com:o/r.git'), 'ssh');
    assert.equal(transportOf('file:///srv/r.git'), 'file');
    assert.equal(transportOf('/srv/r.git'), 'local');
    assert.equal(transportOf('./repos/r.git'), 'local');
  });

  test('secret problems name the Secret and what to add', () => {
    const p = checkAuthSecret(
      'ssh://git@h/r',
      secret('s', { identity: '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n' }),
    );
    assert.equal(p.length, 1);
    assert.match(p[0]!.message, /known_hosts/);
    assert.equal(p[0]!.object, 'Secret flux-system/s');
    assert.deepEqual(checkAuthSecret('https://h/r', secret('s', { username: 'u', password: 'p' })), []);
    assert.deepEqual(checkAuthSecret('https://h/r', secret('s', { bearerToken: 't' })), []);
    assert.equal(checkAuthSecret('https://h/r', secret('s', { username: 'u' })).length, 1);
  });
});

describe('refs', () => {
  test("Flux's precedence: commit, name, semver, tag, branch; automation over repository", () => {
    assert.deepEqual(chooseRef({ branch: 'a' }, { tag: 'v1' }), { branch: 'a' });
    assert.deepEqual(chooseRef(undefined, { tag: 'v1' }), { tag: 'v1' });
    assert.deepEqual(chooseRef({}, { branch: 'b' }), { branch: 'b' });
    assert.equal(chooseRef(undefined, undefined), undefined);
  });

  test('semver over tags like Masterminds', () => {
    const tags = ['v1.0.0', '1.2.0', 'v1.10.0', 'v2.0.0-rc.1', 'latest', 'v1.3'];
    assert.equal(selectSemverTag('>=1.0.0 <2.0.0', tags), 'v1.10.0');
    assert.equal(selectSemverTag('>=1.0.0, <1.5.0', tags), 'v1.3');
    assert.equal(selectSemverTag('~1.2', tags), '1.2.0');
    assert.equal(selectSemverTag('>=2.0.0-0', tags), 'v2.0.0-rc.1');
    assert.equal(selectSemverTag('>=3', tags), null);
    assert.throws(() => selectSemverTag('not a range', tags), /not a valid semver range/);
  });
});

describe('push output', () => {
  test('porcelain lines and rejection kinds', () => {
    const out =
      'To http://h/r.git\n!\tHEAD:refs/heads/main\t[rejected] (fetch first)\n=\trefs/heads/a:refs/heads/a\t[up to date]\nDone\n';
    assert.deepEqual(parsePorcelain(out), [
      { flag: '!', from: 'HEAD', to: 'refs/heads/main', summary: '[rejected] (fetch first)' },
      { flag: '=', from: 'refs/heads/a', to: 'refs/heads/a', summary: '[up to date]' },
    ]);
    assert.equal(classifyRejection('[rejected] (fetch first)'), 'non-fast-forward');
    assert.equal(classifyRejection('[rejected] (non-fast-forward)'), 'non-fast-forward');
    assert.equal(classifyRejection('[rejected] (stale info)'), 'non-fast-forward');
    assert.equal(classifyRejection('[remote rejected] (failed to update ref)'), 'non-fast-forward');
    assert.equal(classifyRejection('[remote rejected] (pre-receive hook declined)'), 'protected');
    assert.equal(classifyRejection('[remote rejected] (protected branch hook declined)'), 'protected');
  });

  test('trailers keep order, repeat keys, and refuse bad keys', () => {
    assert.deepEqual(trailerArgs({ A: ['1', '2'], B: 'x\ny' }, 'ns/auto'), [
      '--trailer',
      'A: 1',
      '--trailer',
      'A: 2',
      '--trailer',
      'B: x y',
      '--trailer',
      'Pawl-Automation: ns/auto',
    ]);
    assert.throws(() => trailerArgs({ 'bad key': 'x' }), /invalid commit trailer key/);
  });
});

describe('credentials written into an HTTP(S) URL', () => {
  test('are read (decoded) and cut from the URL git is given; other URLs stay as written', () => {
    assert.deepEqual(credentialsInUrl('https://bot:p%40ss%3Aw@git.example.com/org/r.git'), {
      username: 'bot',
      password: 'p@ss:w',
    });
    assert.equal(
      remoteUrl('https://bot:p%40ss@git.example.com:8443/org/r.git?x=1'),
      'https://git.example.com:8443/org/r.git?x=1',
    );
    assert.equal(credentialsInUrl('https://bot@git.example.com/r.git'), null);
    assert.equal(remoteUrl('https://bot@git.example.com/r.git'), 'https://bot@git.example.com/r.git');
    assert.equal(credentialsInUrl('ssh://git:x@git.example.com/r.git'), null);
    assert.equal(remoteUrl('ssh://git@git.example.com/r.git'), 'ssh://git@git.example.com/r.git');
    assert.equal(remoteUrl('git@github.com:org/r.git'), 'git@github.com:org/r.git');
  });
});
