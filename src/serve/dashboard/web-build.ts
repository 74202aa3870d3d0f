/**
 * How the dashboard is bundled (web/ → app.js, app.css, index.html): one set of esbuild options
 * for `npm run build` (scripts/build-web.ts, onto disk) and for a daemon run from a checkout,
 * which bundles web/ in memory on the first request so that the page is never older than the
 * sources it runs beside (as bin/pawl.js runs src/, never a stale dist/).
 */
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { BuildOptions } from 'esbuild';

export function webBuildOptions(webSources: string): BuildOptions {
  return {
    entryPoints: { app: join(webSources, 'app.ts') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    legalComments: 'none',
    logLevel: 'silent',
  };
}

/**
 * The page's files, by name, bundled from `webSources` without touching the disk. esbuild is a
 * development dependency: a checkout installed with `npm install` has it; when it is missing the
 * error says what to do.
 */
export async function bundleWebSources(webSources: string): Promise<Map<string, Buffer>> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    throw new Error(
      `the dashboard's sources (${webSources}) are bundled with esbuild, a development dependency that is not installed: run \`npm install\`, or \`npm run build\` and run the build (PAWL_USE_DIST=1)`,
    );
  }
  const out = await esbuild.build({ ...webBuildOptions(webSources), outdir: '/', write: false });
  const files = new Map<string, Buffer>();
  for (const f of out.outputFiles) files.set(basename(f.path), Buffer.from(f.contents));
  files.set('index.html', await readFile(join(webSources, 'index.html')));
  return files;
}
