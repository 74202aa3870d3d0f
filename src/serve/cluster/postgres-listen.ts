/**
 * The PostgreSQL coordinator's LISTEN connection: LISTEN needs one connection of its own,
 * outside the pool, opened again at the next heartbeat after it drops.
 */
import { errorMessage } from '../../util/index.js';

export interface ListenConnection {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', fn: (msg: { channel: string; payload?: string | undefined }) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
  on(event: 'end', fn: () => void): unknown;
  end(): Promise<void>;
}

export interface ListenerOptions {
  open: () => Promise<ListenConnection>;
  channels: readonly string[];
  onNotification: (channel: string, payload: string | undefined) => void;
  /** The connection failed or closed (not called for the one close() ends). */
  onDrop: (why: string) => void;
}

export class Listener {
  #conn: ListenConnection | null = null;
  #opening: Promise<void> | null = null;

  constructor(private readonly opts: ListenerOptions) {}

  /** Opens the connection and listens, unless it is open (or being opened) already. */
  async ensure(): Promise<void> {
    if (this.#conn) return;
    this.#opening ??= (async () => {
      const conn = await this.opts.open();
      const drop = (why: string) => {
        if (this.#conn !== conn) return;
        this.#conn = null;
        this.opts.onDrop(why);
        conn.end().catch(() => undefined);
      };
      conn.on('error', (err) => drop(errorMessage(err)));
      conn.on('end', () => drop('closed'));
      conn.on('notification', (msg) => this.opts.onNotification(msg.channel, msg.payload));
      for (const channel of this.opts.channels) await conn.query(`LISTEN ${channel}`);
      this.#conn = conn;
    })().finally(() => (this.#opening = null));
    await this.#opening;
  }

  async close(): Promise<void> {
    await this.#conn?.end().catch(() => undefined);
    this.#conn = null;
  }
}
