/** The Git layer: workspaces, commits and pushes through the real `git` CLI. */
export { git, GitError, redact, type GitOptions, type GitResult, type GitFailure } from './exec.js';
export {
  prepareAuth,
  withAuth,
  checkAuthSecret,
  transportOf,
  type GitAuth,
  type GitTransport,
} from './auth.js';
export {
  openWorkspace,
  type Workspace,
  type OpenWorkspaceOptions,
  type ResolvedRef,
  type FileStatus,
} from './workspace.js';
export { withWorkspace, type WithWorkspaceOptions } from './workspace-lock.js';
export { selectSemverTag, chooseRef } from './refs.js';
export { commit, PAWL_AUTOMATION_TRAILER, type CommitOptions, type Identity } from './commit.js';
export type { OwnLine } from './fast-commit.js';
export { forgetKnown } from './known.js';
export {
  push,
  pushWithRetry,
  branchOwnedByPawl,
  pawlBranchBeyondBase,
  type PushOptions,
  type PushResult,
  type PushRejection,
  type PushWithRetryOptions,
  type PushWithRetryResult,
} from './push.js';
export {
  lineHistory,
  releasedSince,
  parseLineLogDiff,
  valueOnLine,
  type MarkedLine,
  type LineChange,
  type HistoryRequest,
  type HistoryOptions,
  type HistoryMap,
} from './history.js';
export { blameHistory, parseBlame, parseDiff, previousValue, type Located } from './blame.js';
export { findPerson, parseIdentity, type PersonSource } from './person.js';
