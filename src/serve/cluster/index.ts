/** Coordination of `pawl serve` replicas (docs/replicas.md): the interface and its two implementations. */
export type * from './types.js';
export { LocalCoordinator } from './local.js';
export { LeaderCoordinator } from './leader.js';
// The PostgreSQL coordinator (and `pg`) is loaded only when a replica uses it.
export const loadPostgresCoordinator = () => import('./postgres.js');
export type { PostgresCoordinator, ListenConnection, PostgresCoordinatorOptions } from './postgres.js';
export { CLUSTER_MIGRATIONS, migrateCluster, ClusterSchemaError } from './migrations.js';
export { preferredOwner, gained } from './rendezvous.js';
