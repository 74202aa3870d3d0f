/** Selection: Flux's ImagePolicy strategies over a scan's tags. */
export {
  compilePolicy,
  compileExclusions,
  applyExclusions,
  type CompiledPolicy,
  type PolicySpec,
  type RankedCandidate,
  type Selection,
  type SelectOptions,
} from './policy.js';
export { parseSemverRange, semverLatest } from '../go/index.js';
export { numericalLatest } from './strategies/numerical.js';
export { alphabeticalLatest } from './strategies/alphabetical.js';
export { compareBuildTimes } from './strategies/newestBuild.js';
