#!/usr/bin/env node
// Runs the bundled CLI when built (`npm run build`: dist/cli/main.js), else the TypeScript source
// through tsx. `pawl --version` is answered here, before any of pawl is loaded (start-up is the
// whole cost of that command).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version}\n`);
} else {
  const built = join(root, 'dist', 'cli', 'main.js');
  if (existsSync(built)) {
    await import(pathToFileURL(built).href);
  } else {
    const { register } = await import('tsx/esm/api');
    register();
    await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
  }
}
