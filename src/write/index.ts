/** Writing: setter markers found in YAML and rewritten byte for byte (docs/setters.md). */
export * from './setters/apply.js';
export {
  valueFor,
  imageString,
  plainIsSafe,
  doubleQuoted,
  renderScalar,
  rewrite,
  splice,
  type Splice,
} from './setters/rewrite.js';
export * from './setters/markers.js';
export {
  checkUpdatePath,
  forgetScans,
  keepScan,
  reusedScans,
  scanTree,
  type ScannedFile,
  type FileProblem,
} from './setters/tree.js';
export { spliceSuspend, type ObjectId, type SuspendSplice } from './suspend.js';
