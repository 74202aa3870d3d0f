/**
 * The layer rule of docs/architecture.md is enforced by ESLint (eslint.config.js, LAYERS): these
 * tests lint imports as if they were written in src/ and check which the project's config rejects.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The files linted here do not exist, so the project service cannot type them: the type-aware
// rules (eslint.config.js, for the asynchronous store) are off here; the layer rule needs no types.
const eslint = new ESLint({
  cwd: root,
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      '@typescript-eslint/await-thenable': 'off',
      '@typescript-eslint/no-misused-promises': 'off',
    },
  },
});

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages
    .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
    .map((m) => m.message);
}

describe('import boundaries', () => {
  const cases: { file: string; code: string; error: RegExp | null }[] = [
    // Leaf libraries import nothing of pawl.
    {
      file: 'src/go/x.ts',
      code: "import { RuntimeError } from '../util/index.js';",
      error: /go\/ may not import util\//,
    },
    {
      file: 'src/go/template/x.ts',
      code: "import type { Config } from '../../config/index.js';",
      error: /go\/ may not import config\//,
    },
    {
      file: 'src/util/x.ts',
      code: "import { compileRegex } from '../go/index.js';",
      error: /util\/ may not import go\//,
    },
    {
      file: 'src/image/x.ts',
      code: "import type { Store } from '../store/index.js';",
      error: /image\/ may not import store\//,
    },
    // Nothing below run/ imports it, not even its types; cli/ and serve/ may.
    {
      file: 'src/guard/x.ts',
      code: "import type { RunReport } from '../run/index.js';",
      error: /guard\/ may not import run\//,
    },
    {
      file: 'src/git/x.ts',
      code: "import { runPass } from '../run/index.js';",
      error: /git\/ may not import run\//,
    },
    {
      file: 'src/run/x.ts',
      code: "import { main } from '../cli/main.js';",
      error: /run\/ may not import cli\//,
    },
    { file: 'src/serve/x.ts', code: "import { runPass } from '../run/index.js';", error: null },
    {
      file: 'src/serve/x.ts',
      code: "import { main } from '../cli/main.js';",
      error: /serve\/ may not import cli\//,
    },
    { file: 'src/cli/commands/x.ts', code: "import { runPass } from '../../run/index.js';", error: null },
    // notify/ reads the reports from records/, below run/ and scan/, and imports neither.
    { file: 'src/notify/x.ts', code: "import type { RunReport } from '../records/index.js';", error: null },
    {
      file: 'src/notify/x.ts',
      code: "import type { RunReport } from '../run/index.js';",
      error: /notify\/ may not import run\//,
    },
    {
      file: 'src/notify/x.ts',
      code: "import type { ScanReport } from '../scan/index.js';",
      error: /notify\/ may not import scan\//,
    },
    // The shared records import only the leaf libraries; the guard reads them, not the store.
    {
      file: 'src/records/x.ts',
      code: "import type { Store } from '../store/index.js';",
      error: /records\/ may not import store\//,
    },
    {
      file: 'src/guard/x.ts',
      code: "import type { Store } from '../store/index.js';",
      error: /guard\/ may not import store\//,
    },
    // A folder enters another only through its index.ts: a type import is no way around that, in any form.
    ...[
      "import type { RunReport } from '../run/report.js';",
      "import { type RunReport } from '../run/report.js';",
      "export type { RunReport } from '../run/report.js';",
    ].map((code) => ({ file: 'src/serve/x.ts', code, error: /enter run\/ through run\/index\.ts/ })),
    {
      file: 'src/notify/providers/x.ts',
      code: "import type { ScanReport } from '../../records/report.js';",
      error: /enter records\/ through records\/index\.ts/,
    },
    {
      file: 'src/notify/providers/x.ts',
      code: "import type { ScanReport } from '../../records/index.js';",
      error: null,
    },
    // Stages point forwards: configuration and the store come first.
    {
      file: 'src/config/x.ts',
      code: "import { compilePolicy } from '../select/index.js';",
      error: /config\/ may not import select\//,
    },
    {
      file: 'src/store/x.ts',
      code: "import type { ScanReport } from '../scan/index.js';",
      error: /store\/ may not import scan\//,
    },
    {
      file: 'src/guard/x.ts',
      code: "import { lineHistory } from '../git/index.js';",
      error: /guard\/ may not import git\//,
    },
    // Flux's commit-message data is configuration's (config/commit-data.ts): config/ needs nothing of git/.
    {
      file: 'src/config/schema/x.ts',
      code: "import { checkCommitMessageTemplate } from '../../git/flux.js';",
      error: /config\/ may not import git\//,
    },
    { file: 'src/git/x.ts', code: "import { TRAILER_POLICY } from '../guard/index.js';", error: null },
    // Other folders are entered through their index.ts.
    {
      file: 'src/run/x.ts',
      code: "import { scanRepositories } from '../scan/scanner.js';",
      error: /enter scan\/ through scan\/index\.ts/,
    },
    {
      file: 'src/scan/registry/x.ts',
      code: "import type { Secret } from '../../config/types.js';",
      error: /enter config\/ through config\/index\.ts/,
    },
    {
      file: 'src/scan/registry/x.ts',
      code: "import type { Secret } from '../../config/index.js';",
      error: null,
    },
    // Inside a folder, anything goes.
    { file: 'src/scan/registry/x.ts', code: "import { scanRepository } from '../scanner.js';", error: null },
    // A folder not in the layer table cannot be imported until it is added there.
    {
      file: 'src/run/x.ts',
      code: "import { x } from '../elsewhere/index.js';",
      error: /not in the layer table/,
    },
  ];
  for (const c of cases) {
    test(`${c.file}: ${c.code}`, async () => {
      const errors = await boundaryErrors(c.file, c.code);
      if (c.error === null) assert.deepEqual(errors, []);
      else {
        assert.equal(errors.length, 1, errors.join('\n'));
        assert.match(errors[0]!, c.error);
      }
    });
  }

  // Each fixture is written into src/ and linted by the eslint command itself (npm run lint).
  const fixtures = [
    {
      fixture: 'config-imports-run.ts.txt',
      into: 'src/config',
      error: /config\/ may not import run\/: layers point one way/,
    },
    {
      fixture: 'serve-imports-run-inner-type.ts.txt',
      into: 'src/serve',
      error: /enter run\/ through run\/index\.ts/,
    },
  ];
  for (const f of fixtures) {
    test(`the eslint command (npm run lint) fails on ${f.fixture}, written into ${f.into}/`, async () => {
      const fixture = readFileSync(join(root, 'test/lint/fixtures', f.fixture), 'utf8');
      const file = join(root, f.into, `lint-fixture-${randomBytes(4).toString('hex')}.ts`);
      writeFileSync(file, fixture);
      try {
        const eslintBin = join(root, 'node_modules/eslint/bin/eslint.js');
        const failure = await promisify(execFile)(process.execPath, [eslintBin, file], { cwd: root }).then(
          () => null,
          (err: { code?: number; stdout?: string }) => err,
        );
        assert.ok(failure, `eslint accepted ${f.fixture} in ${f.into}/`);
        assert.equal(failure.code, 1);
        assert.match(failure.stdout ?? '', f.error);
      } finally {
        rmSync(file, { force: true });
      }
    });
  }

  test('the tree itself keeps the rule', async () => {
    const results = await eslint.lintFiles(['src']);
    const broken = results.flatMap((r) =>
      r.messages
        .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
        .map((m) => `${r.filePath}:${m.line} ${m.message}`),
    );
    assert.deepEqual(broken, []);
  });
});
