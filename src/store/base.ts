/**
 * What both backends answer alike: a single repository's or policy's read is the batch read of
 * one, so each backend writes only the batch query (one statement for 500 names, docs/store.md).
 */
import type { ScanRecord } from '../records/index.js';
import type { LatestScansOf, PolicyState } from './types.js';

export abstract class SingleReads {
  abstract latestScans(repositories: readonly string[]): Promise<LatestScansOf>;
  abstract currentTagsOf(repositories: readonly string[]): Promise<Map<string, string[]>>;
  abstract policyStates(policies: readonly string[]): Promise<Map<string, PolicyState>>;

  async lastFinishedScan(repository: string): Promise<ScanRecord | null> {
    return (await this.latestScans([repository])).get(repository)?.finished ?? null;
  }

  async lastGoodScan(repository: string): Promise<ScanRecord | null> {
    return (await this.latestScans([repository])).get(repository)?.good ?? null;
  }

  async currentTags(repository: string): Promise<string[]> {
    return (await this.currentTagsOf([repository])).get(repository) ?? [];
  }

  async getPolicyState(policy: string): Promise<PolicyState | null> {
    return (await this.policyStates([policy])).get(policy) ?? null;
  }
}
