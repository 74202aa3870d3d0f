export { compileRegex, expandTemplate, type Re2 } from './regex.js';
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
export {
  parseSemverRange,
  parseVersion,
  newVersion,
  compareVersions,
  versionKey,
  semverLatest,
  type SemverRange,
  type SemverVersion,
} from './strategies/semver.js';
export { parseGoFloat, numericalLatest } from './strategies/numerical.js';
export { compareGoStrings, alphabeticalLatest } from './strategies/alphabetical.js';
export { compareBuildTimes } from './strategies/newestBuild.js';
