#!/usr/bin/env node
// `pawl --version` is answered here, before any of pawl is loaded (start-up is the whole cost of
// that command). Otherwise: in a checkout (src/ beside bin/) the TypeScript sources run through
// tsx, so a dist/ left by an earlier `npm run build` is never run stale; in the npm package and
// the image (no src/) the bundle in dist/ runs. PAWL_USE_DIST=1 runs dist/ in a checkout too
// (the benches measure the build that way, as it runs once installed).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
const source = join(root, 'src', 'cli', 'main.ts');
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  // `pawl --version | true`: a reader gone before the write ends the output, not the command
  // (src/cli/entry.ts does the same for every other command).
  process.stdout.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
  });
  process.stdout.write(`${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version}\n`);
} else if (existsSync(source) && process.env.PAWL_USE_DIST !== '1') {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(source).href);
} else {
  await import(pathToFileURL(join(root, 'dist', 'cli', 'main.js')).href);
}
