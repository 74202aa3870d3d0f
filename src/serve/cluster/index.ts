/** Coordination of `pawl serve` replicas (docs/replicas.md): the interface and its two implementations. */
export type {
  ClaimInfo,
  Coordinator,
  Lease,
  MembershipChange,
  ReplicaInfo,
  TakenWork,
  WorkItem,
  WorkSource,
} from './types.js';
export { LocalCoordinator } from './local.js';
export {
  PostgresCoordinator,
  LeaseLostError,
  connectPostgresCoordinator,
  defaultReplicaId,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_TTL_MS,
  MEMBERS_CHANNEL,
  WORK_CHANNEL,
  type ListenConnection,
  type PostgresCoordinatorOptions,
} from './postgres.js';
export { CLUSTER_MIGRATIONS, migrateCluster, ClusterSchemaError } from './migrations.js';
export { preferredOwner, gained } from './rendezvous.js';
