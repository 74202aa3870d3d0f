/**
 * Writes status through the status subresource, never `spec`. The status is computed from the
 * object as the server has it now (its generation, its previous conditions and refs), and the
 * patch names that resourceVersion: when someone changed the object in between (409 Conflict),
 * it is read again and the status computed again, a few times.
 */
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
      try {
        return await this.client.patchStatus(resource, namespace, name, status, obj.metadata.resourceVersion);
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) return undefined;
        if (err instanceof KubeApiError && err.status === 409 && attempt < this.retries) continue;
        throw err;
      }
    }
  }
}
