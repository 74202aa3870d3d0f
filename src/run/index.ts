/** One pass of the pipeline and the read-only views of it (explain); entered here by serve/ and cli/. */
export { runPass, passExitCode, type PassDeps, type PassOptions } from './pass.js';
export { explain, type Explanation } from './explain.js';
export { automationsFor } from './people.js';
export type * from './report.js';
