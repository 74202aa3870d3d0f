/** Selection: Flux's ImagePolicy strategies over a scan's tags. */
export {
  compilePolicy,
  sharedPolicy,
  sharedPolicyCount,
  compileExclusions,
  applyExclusions,
  type CompiledPolicy,
  type PolicySpec,
  type RankedCandidate,
  type Selection,
  type SelectOptions,
} from './policy.js';
export { parseSemverRange } from '../go/index.js';
export { semverLatest, semverStrategy } from './semver.js';
export { numericalLatest, numericalStrategy } from './numerical.js';
export { alphabeticalLatest, alphabeticalStrategy } from './alphabetical.js';
export { compareBuildTimes, newestBuildStrategy } from './newestBuild.js';
export { strategyFor } from './factory.js';
export type { Strategy } from './strategy.js';
