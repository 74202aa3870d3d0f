/**
 * SQLite's schema versions, applied in order; `PRAGMA user_version` records the last one applied.
 * Append new steps; never edit a released one. Times are integer milliseconds since the epoch.
 */
import { schemaV1 } from '../schema.js';

export const MIGRATIONS: readonly string[] = [
  schemaV1({
    id: 'INTEGER PRIMARY KEY AUTOINCREMENT',
    big: 'INTEGER',
    flag: 'INTEGER',
    keyed: ' WITHOUT ROWID',
    indexes: '',
  }),
];
