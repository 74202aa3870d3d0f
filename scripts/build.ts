/**
 * `npm run build`: the shipped CLI as esbuild bundles in dist/ (docs/performance.md, "The
 * build"). Node 20 has no module compile cache, so the CLI brings its own:
 *
 * - dist/cli/pawl.cjs: src/cli/entry.ts and everything it imports (pawl and its dependencies),
 *   found by following imports, so code added later is bundled without listing it here. CommonJS,
 *   because Node 20 can hand V8 a code cache only for a script it compiles through `vm.Script`
 *   (src/cli/code-cache.ts), not for an ES module. esbuild cannot split a CommonJS bundle: the
 *   commands' `import()`s become functions that evaluate a module on first call, so `pawl validate`
 *   still runs no registry client, SQLite or git code, and V8 compiles (and caches) only the
 *   functions a command runs. Nothing below src/cli/entry.ts may use top-level await.
 * - dist/cli/main.js: the launcher (src/cli/launch.ts): sets the command's V8 flags, compiles
 *   pawl.cjs through the cache, runs it. ESM, a few kilobytes; the bundle's hash is written in.
 * - better-sqlite3 stays external: it loads a native addon relative to its own package.
 * - `import.meta.url` (two modules locate files beside themselves) is the bundle's own URL.
 */
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
/**
 * Native addons (and packages that locate files beside themselves at run time). esbuild is only
 * imported by a daemon run from a checkout's sources (src/serve/dashboard/web-build.ts), never by the build.
 */
export const EXTERNAL = ['better-sqlite3', 'esbuild'];

/** The global (a Symbol.for key) counting the bundle's modules evaluated so far (src/cli/code-cache.ts). */
export const MODULES_EVALUATED = 'pawl.modulesEvaluated';

/**
 * esbuild's two helpers that evaluate a bundled module on its first use (`__esm` for an ES module
 * reached by `import()` or `require`, `__commonJS` for a CommonJS one) look up the module's
 * function by `__getOwnPropNames(x)[0]` then, and only then. That call becomes the banner's
 * `__pawlInitFirstKey__(x)`, which counts too: the launcher rewrites the code cache when a run
 * evaluated more modules than the run that wrote it (a not-due pass first, a scanning pass later:
 * undici is then in the cache too). The same length, so the source map's columns still hold. A
 * new esbuild that writes the helpers otherwise fails the build here, not the cache silently.
 */
export function countModules(bundle: string): string {
  let out = bundle;
  for (const v of ['fn', 'cb']) {
    const from = `${v}[__getOwnPropNames(${v})[0]]`;
    const to = `${v}[__pawlInitFirstKey__(${v})]`;
    const at = out.indexOf(from);
    if (at < 0 || at > 4096 || to.length !== from.length)
      throw new Error(`build: esbuild's helper ${from} not found; see countModules in scripts/build.ts`);
    out = out.slice(0, at) + to + out.slice(at + from.length);
  }
  return out;
}

const COMMON = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  // Whitespace and syntax only: names stay readable in stack traces; V8 parses less.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'linked',
  logLevel: 'warning',
} as const;

export async function buildCli(outDir = join(root, 'dist')): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
  const bundle = join(outDir, 'cli', 'pawl.cjs');
  const cjs = await build({
    ...COMMON,
    entryPoints: ['src/cli/entry.ts'],
    outfile: bundle,
    format: 'cjs',
    external: EXTERNAL,
    define: { 'import.meta.url': '__pawlImportMetaUrl' },
    // "use strict" first: esbuild's own comes after the banner, where it is no directive.
    banner: {
      js: [
        "'use strict';",
        "var __pawlImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
        `globalThis[Symbol.for('${MODULES_EVALUATED}')] = 0;`,
        `var __pawlInitFirstKey__ = (o) => (globalThis[Symbol.for('${MODULES_EVALUATED}')]++, Object.getOwnPropertyNames(o)[0]);`,
      ].join('\n'),
    },
  });
  if (cjs.errors.length > 0) throw new Error(`build failed: ${cjs.errors.length} errors`);
  const text = countModules(await readFile(bundle, 'utf8'));
  // V8 keeps the bundle's source for as long as the process runs (it compiles functions lazily
  // from it), as one byte a character when every character is Latin-1 and two otherwise: one
  // micro sign in a regular expression made the daemon hold 8 MB instead of 4 (issue 27).
  // esbuild escapes strings and identifiers, not every regular expression or template. And the
  // launcher reads the bundle as Latin-1, which is ASCII read faster (src/cli/code-cache.ts).
  const wide = /[^\x00-\x7f]/.exec(text);
  if (wide) {
    const line = text.slice(0, wide.index).split('\n').length;
    throw new Error(
      `build: the bundle is not ASCII: U+${wide[0].codePointAt(0)!.toString(16).padStart(4, '0')} at line ${line} of ${bundle} (its source map names the file; write the character as an escape there)`,
    );
  }
  await writeFile(bundle, text);
  const hash = createHash('sha256').update(text).digest('hex');
  const launcher = await build({
    ...COMMON,
    entryPoints: ['src/cli/launch.ts'],
    outfile: join(outDir, 'cli', 'main.js'),
    format: 'esm',
    define: { PAWL_BUNDLE_HASH: JSON.stringify(hash) },
  });
  if (launcher.errors.length > 0) throw new Error(`build failed: ${launcher.errors.length} errors`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildCli(process.argv[2]);
}
