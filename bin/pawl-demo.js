#!/usr/bin/env node
// `pawl-demo`: the demo of the README, from the npm package (dist/demo/demo.js, bundled at build
// time) or, in a checkout, from scripts/demo.ts. Needs git and Debian's docker-registry.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const source = join(root, 'scripts', 'demo.ts');
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(source).href);
} else {
  await import(pathToFileURL(join(root, 'dist', 'demo', 'demo.js')).href);
}
