/**
 * Runs a CommonJS file through the built CLI's code cache (src/cli/code-cache.ts) as the launcher
 * does, in a process of its own: loads it, calls its `run()`, writes the cache. argv: the file,
 * the command name for the key. test/cli/code-cache.test.ts reads the PAWL_CODE_CACHE_DEBUG lines.
 */
import { loadBundle } from '../../src/cli/code-cache.js';

const [file, command] = process.argv.slice(2);
const bundle = loadBundle({
  bundle: file!,
  key: { bundleHash: 'test', command: command!, flags: [], execArgv: [], nodeOptions: '' },
  env: process.env,
});
(bundle.exports as { run(): void }).run();
bundle.save();
