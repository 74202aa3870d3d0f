/**
 * Writes status through the status subresource, never `spec`. The status is computed from the
 * object as the server has it now (its generation, its previous conditions and refs), and the
 * patch names that resourceVersion: when someone changed the object in between (409 Conflict),
 * it is read again and the status computed again, a few times. A status the object already has
 * is not written again: a fleet whose registries did not change costs the API server no writes
 * (and its watchers no events).
 */
import { isDeepStrictEqual } from 'node:util';
import { KubeApiError, type KubeClient, type KubeObject, type Resource } from './client.js';
import type { Condition, ObjectState } from './status.js';

const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';

export interface StatusWriterOptions {
  now?: () => Date;
  /** How many times a conflicting write is tried again; default 5. */
  retries?: number;
}

/** The object's state as a status function needs it. */
export function stateOf(obj: KubeObject, now: Date): ObjectState {
  const annotations = (obj.metadata.annotations ?? {}) as Record<string, unknown>;
  const requestedAt = annotations[REQUESTED_AT];
  const status = (obj as { status?: { conditions?: Condition[] } }).status;
  return {
    generation: obj.metadata.generation ?? 0,
    ...(status ? { previous: status } : {}),
    ...(typeof requestedAt === 'string' ? { requestedAt } : {}),
    now,
  };
}

export class StatusWriter {
  private readonly now: () => Date;
  private readonly retries: number;
  /** Status patches sent, and writes skipped because the object already had that status. */
  readonly counts = { patched: 0, unchanged: 0 };

  constructor(
    private readonly client: KubeClient,
    opts: StatusWriterOptions = {},
  ) {
    this.now = opts.now ?? (() => new Date());
    this.retries = opts.retries ?? 5;
  }

  /**
   * Writes `compute(state)` as the object's status. Returns the object as written, or undefined
   * when the object is gone (deleted while pawl worked) or `compute` had nothing to write.
   */
  async write(
    resource: Resource,
    namespace: string,
    name: string,
    compute: (state: ObjectState) => Record<string, unknown> | undefined,
  ): Promise<KubeObject | undefined> {
    for (let attempt = 0; ; attempt++) {
      let obj: KubeObject;
      try {
        obj = await this.client.get(resource, namespace, name);
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) return undefined;
        throw err;
      }
      const status = compute(stateOf(obj, this.now()));
      if (status === undefined) return undefined;
      if (unchanged((obj as { status?: unknown }).status, status)) {
        this.counts.unchanged++;
        return obj;
      }
      try {
        this.counts.patched++;
        return await this.client.patchStatus(resource, namespace, name, status, obj.metadata.resourceVersion);
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) return undefined;
        if (err instanceof KubeApiError && err.status === 409 && attempt < this.retries) continue;
        throw err;
      }
    }
  }
}

/**
 * Whether a merge patch of `status` would change nothing: every field it sets already has that
 * value (fields it does not name are left as they are by a merge patch anyway).
 */
function unchanged(current: unknown, status: Record<string, unknown>): boolean {
  if (current === null || typeof current !== 'object') return false;
  const now = current as Record<string, unknown>;
  return Object.entries(status).every(([k, v]) => isDeepStrictEqual(now[k], v));
}
