/**
 * Forges: pull requests on GitHub, GitLab and Gitea/Forgejo behind one small interface. The
 * token is given per client and put only in a header (auth.ts); `fetch` and `sleep` are injected.
 */
import { authHeader } from './auth.js';
import { giteaClient } from './gitea.js';
import { githubClient } from './github.js';
import { gitlabClient } from './gitlab.js';
import { ForgeHttp, type Fetch } from './http.js';
import type { ForgeClient, ForgeRepo } from './types.js';

export * from './types.js';
export { ForgeError, type Fetch } from './http.js';
export { forgeRepo, gitUrlParts, forgeKindOfHost } from './detect.js';

export interface ForgeClientOptions {
  fetch: Fetch;
  token: string;
  sleep?: (ms: number) => Promise<void>;
  attempts?: number;
  backoffBaseMs?: number;
  random?: () => number;
}

export function forgeClient(repo: ForgeRepo, opts: ForgeClientOptions): ForgeClient {
  const http = new ForgeHttp({
    fetch: opts.fetch,
    token: opts.token,
    auth: authHeader(repo.kind, opts.token),
    ...(opts.sleep ? { sleep: opts.sleep } : {}),
    ...(opts.attempts !== undefined ? { attempts: opts.attempts } : {}),
    ...(opts.backoffBaseMs !== undefined ? { backoffBaseMs: opts.backoffBaseMs } : {}),
    ...(opts.random ? { random: opts.random } : {}),
  });
  switch (repo.kind) {
    case 'gitea':
      return giteaClient(http, repo.apiUrl, repo.path);
    case 'github':
      return githubClient(http, repo.apiUrl, repo.path);
    case 'gitlab':
      return gitlabClient(http, repo.apiUrl, repo.path);
  }
}
