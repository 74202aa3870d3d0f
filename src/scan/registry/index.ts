/** The registry client's public surface (see docs/registries.md). */
export type {
  RepositoryRef,
  RecordedResponse,
  TagList,
  ManifestHead,
  Platform,
  LegacySignature,
  SignatureFind,
  FoundBundle,
  BundleFind,
  RegistryClient,
  BuildTime,
  BuildTimeCache,
} from './types.js';
export { createRegistryClient, type RegistryClientOptions } from './client.js';
export { RegistryError, type RecordOptions } from './exchange.js';
export { parseChallenge } from './auth.js';
export { parseNextLink } from './tags.js';
export { parseCreated } from './manifests.js';
export { MEDIA } from './schemas.js';
export { SIGN_PREDICATE, BUNDLE_MEDIA_TYPE } from './referrers.js';
export {
  SIGNATURE_ANNOTATION,
  CERTIFICATE_ANNOTATION,
  CHAIN_ANNOTATION,
  REKOR_BUNDLE_ANNOTATION,
} from './signatures.js';
export {
  parseRepositoryRef,
  parseImageReference,
  familiarName,
  isLoopbackHost,
  ImageReferenceError,
  DOCKER_HUB,
  DOCKER_HUB_API,
  type RegistryImage,
  type ParseOptions,
} from './reference.js';
export {
  RegistryPool,
  defaultRegistryPool,
  sharedRegistryPool,
  DEFAULT_LIMITS,
  RegistryBackoffError,
  realSleep,
  type RegistryLimits,
  type Sleep,
} from './pool.js';
export {
  credentialsFromSecret,
  credentialsFromDockerConfig,
  runCredentialHelper,
  type Credentials,
  type HelperRunner,
} from './credentials.js';
export { Redactor, REDACTED } from '../../util/index.js';
export {
  cloudCredentialSource,
  defaultCloudDeps,
  providerHostProblem,
  CLOUD_PROVIDERS,
  type CloudDeps,
  type CloudEndpoints,
  type CloudProvider,
  type CredentialSource,
} from './cloud/index.js';
