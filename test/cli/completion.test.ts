import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { COMMAND_SUMMARIES, buildProgram } from '../../src/cli/main.js';
import { SHELLS, completionScript, completionTree } from '../../src/cli/completion.js';
import { runCli } from '../helpers/world.js';

const execFileP = promisify(execFile);

test('every command and subcommand of the table appears in each shell script', async () => {
  const tree = completionTree(await buildProgram([], true));
  const names = COMMAND_SUMMARIES.map(([term]) => term.split(' ')[0]!);
  assert.deepEqual(
    tree.subcommands.map((c) => c.name),
    names,
  );
  for (const shell of SHELLS) {
    const script = completionScript(shell, tree);
    for (const c of tree.subcommands) {
      assert.ok(script.includes(c.name), `${shell}: ${c.name}`);
      for (const s of c.subcommands) assert.ok(script.includes(s.name), `${shell}: ${c.name} ${s.name}`);
    }
  }
});

/** What bash offers for the words typed so far (the last one being completed). */
async function bashComplete(script: string, words: string[]): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-completion-'));
  try {
    await writeFile(join(dir, 'pawl.bash'), script);
    const quoted = words.map((w) => `'${w}'`).join(' ');
    const { stdout } = await execFileP('bash', [
      '-c',
      `source ${join(dir, 'pawl.bash')}; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _pawl; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ]);
    return stdout.split('\n').filter((l) => l !== '');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('pawl completion bash completes commands, argument choices and options, skipping option values', async () => {
  const r = await runCli(['completion', 'bash']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await bashComplete(r.stdout, ['pawl', 're']), ['release', 'reconcile', 'resume']);
  assert.deepEqual(await bashComplete(r.stdout, ['pawl', '-c', 'get', 'ge']), ['get']);
  assert.deepEqual(await bashComplete(r.stdout, ['pawl', 'get', 'po']), ['policies']);
  assert.deepEqual(await bashComplete(r.stdout, ['pawl', 'get', 'policies', '--js']), ['--json']);
  assert.deepEqual(await bashComplete(r.stdout, ['pawl', 'policy', '']), ['eval']);
  assert.deepEqual(await bashComplete(r.stdout, ['pawl', 'suspend', 'pol']), ['policy']);
  const script = await runCli(['completion', 'tcsh']);
  assert.equal(script.code, 2);
});

test('an unknown command prints one line of usage and a suggestion, not the whole help (exit 2)', async () => {
  const r = await runCli(['rn']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command 'rn'/);
  assert.match(r.stderr, /Did you mean run\?/);
  assert.match(r.stderr, /^usage: pawl <command> \[options\]/m);
  assert.doesNotMatch(r.stderr, /validate/, 'the command list is not printed');
  const far = await runCli(['zzzzqq']);
  assert.equal(far.code, 2);
  assert.doesNotMatch(far.stderr, /Did you mean/);
  // A command's own mistakes still show that command's help.
  const sub = await runCli(['get']);
  assert.equal(sub.code, 2);
  assert.match(sub.stderr, /Usage: pawl get/);
});
