/**
 * The built CLI's entry (dist/cli/main.js; bin/pawl.js runs it). It sets the command's V8 flags
 * (src/cli/start-flags.ts), then compiles the CommonJS bundle (dist/cli/pawl.cjs) through the code
 * cache (src/cli/code-cache.ts), runs the command, and writes the cache if this start had none.
 * Kept small, with no dependencies: this file itself is compiled without a cache.
 */
import { setFlagsFromString } from 'node:v8';
import { fileURLToPath } from 'node:url';
import { loadBundle } from './code-cache.js';
import { commandName } from './command-name.js';
import { startFlags } from './start-flags.js';
// The hook alone, not util/index.ts (see start-flags.ts).
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import { onSaveCodeCache } from '../util/code-cache-hook.js';

/** The bundle's SHA-256, written in by scripts/build.ts. */
declare const PAWL_BUNDLE_HASH: string;

const argv = process.argv.slice(2);
const flags = startFlags(argv, process.execArgv, process.env.NODE_OPTIONS);
for (const flag of flags) setFlagsFromString(flag);
const command = commandName(argv);
const bundle = loadBundle({
  bundle: fileURLToPath(new URL('./pawl.cjs', import.meta.url)),
  key: {
    bundleHash: PAWL_BUNDLE_HASH,
    command: command ?? 'none',
    flags,
    execArgv: process.execArgv,
    nodeOptions: process.env.NODE_OPTIONS,
  },
  env: process.env,
});
const { main } = bundle.exports as { main(argv: string[]): Promise<number> };
// The daemon writes it after its first pass (src/cli/commands/serve.ts); a one-shot command below.
if (command === 'serve') onSaveCodeCache(bundle.save);
process.exitCode = await main(argv);
if (command !== 'serve') bundle.save();
