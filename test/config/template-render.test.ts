import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { runCli } from '../helpers/world.js';

const automation = (template: string, values = '') => `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: { name: a, namespace: flux-system }
spec:
  interval: 5m
  sourceRef: { kind: GitRepository, name: fleet }
  git:
    commit:
      author: { name: bot, email: bot@example.com }
      messageTemplate: '${template}'
${values}  update: { path: ./ }
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: { name: fleet, namespace: flux-system }
spec: { url: https://example.com/fleet.git, interval: 1m }
`;

async function problemsOf(yaml: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-tpl-'));
  try {
    await writeFile(join(dir, 'a.yaml'), yaml);
    const { problems } = await loadConfig([dir]);
    return problems.filter((p) => p.severity === 'error').map((p) => `${p.location.line}: ${p.message}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('a template that parses but cannot render (a field Flux removed) is a configuration error at its line', async () => {
  const problems = await problemsOf(automation('{{ range .Updated.Images }}{{ . }}{{ end }}'));
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^10: .*messageTemplate: cannot be rendered: .*removed '\.Updated' field/);
});

test('a template rendering messageTemplateValues passes when the values are set', async () => {
  const ok = await problemsOf(
    automation('Update {{ .Values.env | upper }}', '      messageTemplateValues: { env: prod }\n'),
  );
  assert.deepEqual(ok, []);
});

test('a template that would exhaust memory or time is a configuration error at its line, not a crash', async () => {
  const cases: [string, RegExp][] = [
    ['{{ range until 200000000 }}x{{ end }}', /error calling until: 200000000 items is more than the 100000/],
    ['{{ range 200000000 }}x{{ end }}', /the output is longer than 1048576 characters/],
    ['{{ range 200000000 }}{{ end }}', /more than 5000000 steps/],
    ['{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}', /more than 5000000 steps/],
    ['{{ repeat 200000000 "x" }}', /error calling repeat: 200000000 characters is more than the 1048576/],
    ['{{ indent 100000000 "a" }}', /error calling indent: .* characters is more than the 1048576/],
    [
      '{{ $s := "xxxxxxxx" }}{{ range until 40 }}{{ $s = cat $s $s $s $s }}{{ end }}',
      /cat returned \d+ characters; a value may have at most 1048576/,
    ],
    ['{{ seq 1 200000000 }}', /error calling seq: 200000000 items is more than the 100000/],
  ];
  for (const [template, expected] of cases) {
    const problems = await problemsOf(automation(template));
    assert.equal(problems.length, 1, template);
    assert.match(problems[0]!, /^10: .*messageTemplate: cannot be rendered: /, template);
    assert.match(problems[0]!, expected, template);
  }
});

test('the bounds leave room for ordinary messages: a long Flux-style listing renders', async () => {
  assert.deepEqual(
    await problemsOf(automation('{{ range until 50000 }}line {{ . }}, {{ end }}{{ repeat 1000 "=" }}')),
    [],
  );
});

test('pawl validate: exit 2 naming file:line for a template that would grow without bound', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-tpl-cli-'));
  try {
    await writeFile(join(dir, 'a.yaml'), automation('{{ range until 200000000 }}x{{ end }}'));
    const r = await runCli(['validate', '-c', dir]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout + r.stderr, /a\.yaml:10.*messageTemplate: cannot be rendered: .*200000000 items/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
