/**
 * Go-compatible libraries: the parts of Go (and of Go libraries Flux uses) whose exact behaviour
 * pawl must reproduce. A leaf: nothing here imports any other part of pawl.
 */
export * from './template/index.js';
export { compileRegex, expandTemplate, literalAffixes, type Re2 } from './regexp.js';
export {
  parseSemverRange,
  parseVersion,
  newVersion,
  compareVersions,
  versionKey,
  type SemverRange,
  type SemverVersion,
} from './semver.js';
export { parseGoFloat } from './strconv.js';
export { compareGoStrings, isWide } from './strings.js';
