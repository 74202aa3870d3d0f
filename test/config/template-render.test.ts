import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';

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
