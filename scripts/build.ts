/**
 * `npm run build`: the shipped CLI as one esbuild bundle in dist/ (docs/performance.md, "The
 * build"). Node 20 has no module compile cache, so start-up is mostly resolving, reading and
 * compiling modules: one file instead of hundreds is most of the win.
 *
 * - Entry src/cli/main.ts only; everything it imports (pawl and its dependencies) is found by
 *   following imports, so code added later is bundled without listing it here.
 * - Code splitting keeps the commands' dynamic `import()`s lazy: `pawl validate` does not
 *   compile the registry client, SQLite or git layers (dist/cli/main.js + dist/cli/chunks/).
 * - better-sqlite3 stays external: it loads a native addon relative to its own package.
 * - CommonJS dependencies bundled into ESM need `require`, `__filename` and `__dirname`; the
 *   banner provides them (for dist/cli/).
 */
import { build } from 'esbuild';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
/**
 * Native addons (and packages that locate files beside themselves at run time). esbuild is only
 * imported by a daemon run from a checkout's sources (src/serve/dashboard/web-build.ts), never by the build.
 */
export const EXTERNAL = ['better-sqlite3', 'esbuild'];

export async function buildCli(outDir = join(root, 'dist')): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { 'cli/main': 'src/cli/main.ts' },
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    chunkNames: 'cli/chunks/[name]-[hash]',
    external: EXTERNAL,
    sourcemap: 'linked',
    // Whitespace and syntax only: names stay readable in stack traces; V8 parses less.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'linked',
    banner: {
      js: [
        "import { createRequire as __pawlCreateRequire } from 'node:module';",
        "import { fileURLToPath as __pawlFileURLToPath } from 'node:url';",
        'const require = __pawlCreateRequire(import.meta.url);',
        'const __filename = __pawlFileURLToPath(import.meta.url);',
        "const __dirname = __pawlFileURLToPath(new URL('.', import.meta.url));",
      ].join('\n'),
    },
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error(`build failed: ${result.errors.length} errors`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildCli(process.argv[2]);
}
