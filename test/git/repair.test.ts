/**
 * The workspace check (src/git/repair.ts `healthy`) reads origin's URL from a plain config itself
 * and leaves every other config to git. Each case here is checked against git's own answer
 * (`git config --get remote.origin.url`, what the check ran every pass before), so the reader
 * can never call a workspace healthy that git would not, or the other way round.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { healthy } from '../../src/git/repair.js';

const execFileP = promisify(execFile);
const URL = 'https://git.example.com/team/fleet.git';
const CORE = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n';

async function gitAnswer(dir: string): Promise<string | null> {
  try {
    const { stdout } = await execFileP('git', [
      `--git-dir=${join(dir, '.git')}`,
      'config',
      '--get',
      'remote.origin.url',
    ]);
    return stdout.trim();
  } catch {
    return null;
  }
}

const CASES: [string, string][] = [
  [
    'as git clone writes it',
    `${CORE}[remote "origin"]\n\turl = ${URL}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`,
  ],
  ['CRLF line ends', `${CORE}[remote "origin"]\r\n\turl = ${URL}\r\n`.replace(/\n(?!$)/g, '\r\n')],
  ['a section name in capitals', `${CORE}[Remote "origin"]\n\tURL=${URL}\n`],
  ['another remote only', `${CORE}[remote "upstream"]\n\turl = ${URL}\n`],
  ['a subsection in other case', `${CORE}[remote "Origin"]\n\turl = ${URL}\n`],
  ['the old dotted form', `${CORE}[remote.origin]\n\turl = ${URL}\n`],
  [
    'two URLs, the last one wins',
    `${CORE}[remote "origin"]\n\turl = https://old.example.com/x.git\n\turl = ${URL}\n`,
  ],
  ['a quoted value', `${CORE}[remote "origin"]\n\turl = "${URL}"\n`],
  ['a comment after the value', `${CORE}[remote "origin"]\n\turl = ${URL} # the fleet\n`],
  ['a hash inside the value', `${CORE}[remote "origin"]\n\turl = ${URL}#frag\n`],
  ['an include naming another URL', `${CORE}[remote "origin"]\n\turl = ${URL}\n[include]\n\tpath = extra\n`],
  ['a continued line', `${CORE}[remote "origin"]\n\turl = https://git.example.com/\\\nteam/fleet.git\n`],
  ['comment lines and blank lines', `# made by hand\n\n${CORE}; more\n[remote "origin"]\n\n\turl = ${URL}\n`],
  ['no URL at all', CORE],
  ['an entry before any section', `url = ${URL}\n${CORE}[remote "origin"]\n\turl = ${URL}\n`],
  ['not a config file', `this is not\n[a config\n`],
];

test('healthy agrees with git on origin URL for every kind of config file', async () => {
  const base = await mkdtemp(join(tmpdir(), 'pawl-repair-'));
  try {
    const dir = join(base, 'ws');
    await execFileP('git', ['init', '--quiet', dir]);
    await writeFile(
      join(dir, '.git', 'extra'),
      '[remote "origin"]\n\turl = https://elsewhere.example.com/x.git\n',
    );
    for (const [name, config] of CASES) {
      await writeFile(join(dir, '.git', 'config'), config);
      const answer = await gitAnswer(dir);
      if (answer !== null) assert.equal(await healthy(dir, answer), true, `${name}: git says ${answer}`);
      assert.equal(await healthy(dir, 'https://other.example.com/x.git'), false, `${name}: another URL`);
      assert.equal(await healthy(dir, URL), answer === URL, `${name}: git says ${String(answer)}`);
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

test('a repository that is not whole is not healthy, whatever its config says', async () => {
  const base = await mkdtemp(join(tmpdir(), 'pawl-repair-'));
  try {
    const dir = join(base, 'ws');
    await execFileP('git', ['init', '--quiet', dir]);
    await writeFile(join(dir, '.git', 'config'), `${CORE}[remote "origin"]\n\turl = ${URL}\n`);
    assert.equal(await healthy(dir, URL), true);
    await rm(join(dir, '.git', 'refs'), { recursive: true });
    assert.equal(await gitAnswer(dir), null, 'git refuses it too');
    assert.equal(await healthy(dir, URL), false, 'no refs/');
    await execFileP('git', ['init', '--quiet', dir]);
    await rm(join(dir, '.git', 'objects'), { recursive: true });
    assert.equal(await healthy(dir, URL), false, 'no objects/');
    await execFileP('git', ['init', '--quiet', dir]);
    await writeFile(join(dir, '.git', 'HEAD'), 'garbage\n');
    assert.equal(await gitAnswer(dir), null, 'git refuses a bad HEAD');
    assert.equal(await healthy(dir, URL), false, 'a bad HEAD');
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});
