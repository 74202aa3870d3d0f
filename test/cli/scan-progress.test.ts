import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { progressIndicator, renderReports } from '../../src/cli/commands/scan.js';
import type { CommandContext } from '../../src/cli/context.js';
import type { ScanReport } from '../../src/scan/scanner.js';
import { silentLogger } from '../../src/util/log.js';
import { Redactor } from '../../src/util/redact.js';

function ctx(tty: boolean, json: boolean): { ctx: CommandContext; err: () => string } {
  const stderr = Object.assign(new PassThrough(), { isTTY: tty });
  let text = '';
  stderr.on('data', (d: Buffer) => (text += d.toString()));
  const c: CommandContext = {
    options: { config: [], stateDir: '.pawl', logLevel: 'silent', json, strict: false },
    log: silentLogger,
    stdout: new PassThrough(),
    stderr,
    redactor: new Redactor(),
  };
  return { ctx: c, err: () => text };
}

const report = (name: string, error: string | null = null): ScanReport => ({
  name,
  image: `r.example/${name}`,
  tags: 3,
  scanned: error === null,
  suspended: false,
  anomalies: [],
  error,
  added: [],
  removed: [],
  requests: 1,
});

test('progress on a terminal: a counter redrawn in place, erased at the end', () => {
  const { ctx: c, err } = ctx(true, false);
  const p = progressIndicator(c, 2);
  p.update(report('apps/a'), 1);
  p.update(report('apps/b', 'boom'), 2);
  p.done();
  const out = err();
  assert.match(out, /scanning 0\/2…/);
  assert.match(out, /\r\x1b\[2Kscanning 1\/2… apps\/a/);
  assert.match(out, /scanning 2\/2… apps\/b \(failed\)/);
  assert.ok(out.endsWith('\r\x1b[2K'));
});

test('no progress when stderr is not a terminal, or with --json', () => {
  for (const [tty, json] of [
    [false, false],
    [true, true],
  ] as const) {
    const { ctx: c, err } = ctx(tty, json);
    const p = progressIndicator(c, 1);
    p.update(report('apps/a'), 1);
    p.done();
    assert.equal(err(), '');
  }
});

test('the table shows suspended repositories and errors', () => {
  const text = renderReports([
    { ...report('apps/a'), added: ['1'], anomalies: [{ kind: 'count-drop', from: 60, to: 3 }] },
    { ...report('apps/p'), scanned: false, suspended: true },
    report('apps/x', '401 Unauthorized'),
  ]);
  const lines = text.split('\n');
  assert.match(lines[1]!, /^apps\/a\s+3\s+1\s+0\s+count-drop \(60→3\)$/);
  assert.match(lines[2]!, /^apps\/p\s+3\s+-\s+-\s+suspended$/);
  assert.match(lines[3]!, /^apps\/x\s+3\s+-\s+-\s+401 Unauthorized$/);
});
