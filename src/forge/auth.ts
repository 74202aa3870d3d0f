/**
 * How each forge wants its API token: a header, never a URL parameter (URLs end up in logs and
 * proxies). Kept apart from the clients so the one place a token is put anywhere is here.
 */
import type { ForgeKind } from './types.js';

export function authHeader(kind: ForgeKind, token: string): Record<string, string> {
  switch (kind) {
    case 'github':
      return { authorization: `Bearer ${token}` };
    case 'gitlab':
      return { 'private-token': token };
    case 'gitea':
      return { authorization: `token ${token}` };
  }
}
