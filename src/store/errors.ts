import { RuntimeError } from '../util/index.js';

/** Why a store could not be used; the daemon pauses on any of them and tries again. */
export type StoreUnavailableReason =
  /** No connection: refused, unknown host, timed out connecting, too many connections, shutting down. */
  | 'unreachable'
  /** The server refused the credentials, or the database does not exist. */
  | 'refused'
  /** The connection broke during a query. */
  | 'lost'
  /** A statement ran past the statement timeout. */
  | 'timeout';

/**
 * The store cannot be reached or used right now (PostgreSQL down, network gone, credentials
 * refused). Nothing was written by the call that failed. A command exits 1 with this message;
 * `pawl serve` pauses its work and reports not-ready until the store answers again. Dispatch
 * on the class (and `reason`), never on the message.
 */
export class StoreUnavailableError extends RuntimeError {
  override name = 'StoreUnavailableError';
  constructor(
    message: string,
    readonly reason: StoreUnavailableReason,
    /** Where the store is, without a password. */
    readonly location: string,
  ) {
    super(message);
  }
}
