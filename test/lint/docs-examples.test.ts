/**
 * The YAML examples in the README and docs/ that hold Flux or pawl objects load without an error
 * (issue 23, item 16: docs/serve.md's Receiver did not), so the documentation cannot drift from
 * what pawl accepts. An example may name what a reader already has — objects it does not define
 * ("… not found. Define it or fix the name.") and Secrets, which never live beside the objects:
 * the token Secret of a Receiver, Provider or pull request is given through PAWL_SECRET_…_TOKEN, as a reader
 * gives it (--secrets-dir or the environment); another Secret left out is at most a warning. Anything else is an error in the documentation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/index.js';
import { ROOT } from '../helpers/world.js';

interface Example {
  where: string;
  yaml: string;
}

/** Fenced ```yaml blocks (indented ones inside lists too) that hold a Flux or pawl object. */
export function yamlExamples(file: string, text: string): Example[] {
  const out: Example[] = [];
  const fence = /^([ \t]*)```ya?ml[^\n]*\n([\s\S]*?)^\1```/gm;
  for (let m = fence.exec(text); m; m = fence.exec(text)) {
    const indent = m[1]!.length;
    const yaml = m[2]!
      .split('\n')
      .map((l) => l.slice(indent))
      .join('\n');
    if (!/^kind:/m.test(yaml) || !/toolkit\.fluxcd\.io|pawl\.dev/.test(yaml)) continue;
    out.push({ where: `${file}:${text.slice(0, m.index).split('\n').length + 1}`, yaml });
  }
  return out;
}

/**
 * PAWL_SECRET_<NS>_<NAME>_TOKEN for the secretRef of each Receiver and Provider, and of an
 * automation's pull requests (they read `token`).
 */
function secretsNamed(yaml: string): Record<string, string> {
  const env: Record<string, string> = {};
  const part = (s: string) => s.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
  for (const doc of parseAllDocuments(yaml)) {
    const o = doc.toJS() as {
      kind?: string;
      metadata?: { namespace?: string };
      spec?: {
        secretRef?: { name?: string };
        git?: { push?: { pullRequest?: { secretRef?: { name?: string } } } };
      };
    };
    const name =
      o?.kind === 'Receiver' || o?.kind === 'Provider'
        ? o.spec?.secretRef?.name
        : o?.kind === 'ImageUpdateAutomation'
          ? o.spec?.git?.push?.pullRequest?.secretRef?.name
          : undefined;
    if (name)
      env[`PAWL_SECRET_${part(o.metadata?.namespace ?? 'default')}_${part(name)}_TOKEN`] = 'x'.repeat(32);
  }
  return env;
}

const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith('.md'),
);
const examples = files.flatMap((f) => yamlExamples(f, readFileSync(join(ROOT, f), 'utf8')));

test('the docs have Flux and pawl examples to check (the extraction is not a no-op)', () => {
  assert.ok(
    examples.some((e) => e.where.startsWith('docs/serve.md') && /kind: Receiver/.test(e.yaml)),
    examples.map((e) => e.where).join(', '),
  );
});

for (const e of examples) {
  test(`${e.where} loads without an error`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pawl-docs-'));
    try {
      const file = join(dir, 'example.yaml');
      await writeFile(file, e.yaml);
      const { problems } = await loadConfig([file], { secrets: { env: secretsNamed(e.yaml) } });
      const errors = problems
        .filter((p) => p.severity === 'error')
        .filter((p) => !/ not found\. Define it or fix the name\.$/.test(p.message));
      assert.deepEqual(
        errors.map((p) => `line ${p.location.line}: ${p.message}`),
        [],
        `${e.where}: the example does not load`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
}
