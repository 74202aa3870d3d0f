/**
 * ImageRepository `spec.image` names a repository only: no scheme, no tag, no digest. The
 * grammar and Docker's rules are src/image/'s; this keeps configuration's names for them.
 */
export {
  repositoryProblem as imageRepositoryProblem,
  isDigest,
  isValidTag,
  TAG_RULE,
} from '../image/index.js';
