/** The daemon's configuration: where it is read (a ConfigSource), and the running one. */
export type { ConfigRead, ConfigSource, Unreadable } from './types.js';
export { FileSource, type FileSourceOptions } from './files.js';
export {
  Configuration,
  loadFirst,
  shrinkProblems,
  type Applied,
  type ConfigurationOptions,
  type LoadedConfig,
  type ReloadOutcome,
} from './configuration.js';
export { connectKube, KubeConfigSource, type KubernetesOptions, type LeaderElectionOptions } from './kube.js';
