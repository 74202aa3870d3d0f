/**
 * Kubernetes mode (SPEC §8): a client for the API server, the configuration it holds (list and
 * watch, turned into pawl's Config), and the status Flux's controllers write.
 */
export {
  loadConnection,
  fromKubeconfig,
  inCluster,
  type KubeConnection,
  type ConnectionOptions,
} from './kubeconfig.js';
export {
  KubeClient,
  KubeApiError,
  ResourceExpiredError,
  apiVersionOf,
  type KubeObject,
  type Resource,
  type WatchEvent,
  type ListOptions,
  type WatchOptions,
} from './client.js';
export {
  KubeSource,
  watchedKinds,
  referencedSecrets,
  type KubeSourceOptions,
  type ConfigListener,
} from './source.js';
export * from './status.js';
export { StatusWriter, stateOf, type StatusWriterOptions } from './writer.js';
export { RESOURCES, resourceOf } from './resources.js';
export { LeaseElector, LEASES, type LeaseClock, type LeaseElectorOptions } from './lease.js';
