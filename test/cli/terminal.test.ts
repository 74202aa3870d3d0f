import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { CommandContext } from '../../src/cli/context.js';
import { createStateDir } from '../../src/cli/store.js';
import { colourWanted, paint, statusLine } from '../../src/cli/terminal.js';
import { silentLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';

function ctx(tty: boolean, json = false): { ctx: CommandContext; err: () => string } {
  const stderr = Object.assign(new PassThrough(), { isTTY: tty });
  let text = '';
  stderr.on('data', (d: Buffer) => (text += d.toString()));
  return {
    ctx: {
      options: { config: [], stateDir: '.pawl', logLevel: 'silent', json, strict: false },
      log: silentLogger,
      stdout: Object.assign(new PassThrough(), { isTTY: tty }),
      stderr,
      redactor: new Redactor(),
    },
    err: () => text,
  };
}

test('colour only on a terminal, never with NO_COLOR, TERM=dumb or --json', () => {
  const tty = Object.assign(new PassThrough(), { isTTY: true });
  assert.equal(colourWanted(tty, {}), true);
  assert.equal(colourWanted(tty, { NO_COLOR: '1' }), false);
  assert.equal(colourWanted(tty, { NO_COLOR: '' }), true, 'an empty NO_COLOR does not count (no-color.org)');
  assert.equal(colourWanted(tty, { TERM: 'dumb' }), false);
  assert.equal(colourWanted(tty, {}, true), false);
  assert.equal(colourWanted(new PassThrough(), {}), false);
  assert.equal(paint(ctx(true).ctx, {}).bad('x'), '\x1b[31mx\x1b[39m');
  assert.equal(paint(ctx(true).ctx, { NO_COLOR: 'yes' }).bad('x'), 'x');
  assert.equal(paint(ctx(false).ctx, {}).good('x'), 'x');
});

test('the status line is drawn and erased on a terminal, and absent otherwise', () => {
  const t = ctx(true);
  const line = statusLine(t.ctx);
  line.show('scanning 1/2… apps/a');
  line.done();
  assert.equal(t.err(), '\r\x1b[2Kscanning 1/2… apps/a\r\x1b[2K');
  for (const quiet of [ctx(false), ctx(true, true)]) {
    statusLine(quiet.ctx).show('x');
    assert.equal(quiet.err(), '');
  }
});

test('a state directory pawl creates ignores itself in Git; an existing one is left as it is', async () => {
  const repo = await mkdtemp(join(tmpdir(), 'pawl-state-'));
  try {
    execFileSync('git', ['init', '--quiet', repo]);
    createStateDir(join(repo, '.pawl'));
    await writeFile(join(repo, '.pawl', 'pawl.db'), 'x');
    assert.equal(
      execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], {
        cwd: repo,
        encoding: 'utf8',
      }),
      '',
    );
    assert.match(await readFile(join(repo, '.pawl', '.gitignore'), 'utf8'), /^\*$/m);
    execFileSync('mkdir', [join(repo, 'given')]);
    createStateDir(join(repo, 'given'));
    await assert.rejects(readFile(join(repo, 'given', '.gitignore')));
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
});
