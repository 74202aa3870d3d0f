import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildProgram, commandName } from '../../src/cli/main.js';
import { runCli } from '../helpers/world.js';

test('the command name is found after global options and their values', () => {
  assert.equal(commandName(['run', '--dry-run']), 'run');
  assert.equal(commandName(['-c', 'run', '--state-dir', 'x', 'validate']), 'validate');
  assert.equal(commandName(['--json', 'release', 'p']), 'release');
  assert.equal(commandName(['--help']), null);
  assert.equal(commandName(['bogus']), null);
  assert.equal(commandName(['toString']), null);
  assert.equal(commandName(['help', 'run']), 'run');
  assert.equal(commandName(['help', 'bogus']), null);
});

test('the help listing from the command summaries is what the command modules register', async () => {
  const summaries = await buildProgram(['--help']);
  const modules = await buildProgram(['--help'], true);
  assert.equal(summaries.helpInformation(), modules.helpInformation());
  assert.deepEqual(
    summaries.commands.map((c) => c.name()),
    modules.commands.map((c) => c.name()),
  );
});

test('pawl --help lists every command; an unknown command is bad usage (exit 2)', async () => {
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  for (const c of [
    'validate',
    'policy',
    'setters',
    'scan',
    'tags',
    'run',
    'explain',
    'rollback',
    'release',
  ]) {
    assert.match(help.stdout, new RegExp(`^  ${c}\\b`, 'm'), c);
  }
  const bad = await runCli(['bogus']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown command 'bogus'/);
});
