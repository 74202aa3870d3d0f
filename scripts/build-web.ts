/**
 * Builds the dashboard (web/ → dist/web/): one ES module, one stylesheet and the page, minified.
 * `npm run build` runs it after tsc; tests call buildWeb() into a temporary directory. The
 * options are shared with a daemon run from a checkout (src/serve/dashboard/web-build.ts).
 */
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { webBuildOptions } from '../src/serve/dashboard/web-build.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export async function buildWeb(outDir = join(ROOT, 'dist', 'web')): Promise<string> {
  await mkdir(outDir, { recursive: true });
  await build({ ...webBuildOptions(join(ROOT, 'web')), outdir: outDir, logLevel: 'warning' });
  await copyFile(join(ROOT, 'web', 'index.html'), join(outDir, 'index.html'));
  return outDir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = await buildWeb(process.argv[2] ? resolve(process.argv[2]) : undefined);
  process.stderr.write(`dashboard built into ${out}\n`);
}
