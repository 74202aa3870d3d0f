/**
 * What GitHub and Gitea do the same way (Gitea's API follows GitHub's): a repository at
 * `/repos/OWNER/NAME`, a pull request that is also an issue (comments, labels, assignees on the
 * issue), closing by `state: closed`, and lists read page by page.
 */
import type { z } from 'zod';
import type { ForgeHttp } from './http.js';
import { commentId, type pullBase } from './pull-schema.js';
import type { PullRequest } from './types.js';

export function repoUrl(apiUrl: string, path: string): string {
  return `${apiUrl}/repos/${path.split('/').map(encodeURIComponent).join('/')}`;
}

export function toPullRequest(p: z.output<typeof pullBase>, merged: boolean): PullRequest {
  return {
    number: p.number,
    url: p.html_url,
    state: merged ? 'merged' : p.state,
    head: p.head.ref,
    base: p.base.ref,
    title: p.title,
    body: p.body ?? '',
    labels: (p.labels ?? []).map((l) => l.name),
  };
}

/** Every page of a list, `perPage` at a time, up to `maxPages` (a bound, not an expectation). */
export async function allPages<T>(
  page: (n: number) => Promise<T[]>,
  perPage: number,
  maxPages: number,
): Promise<T[]> {
  const out: T[] = [];
  for (let n = 1; n <= maxPages; n++) {
    const batch = await page(n);
    out.push(...batch);
    if (batch.length < perPage) break;
  }
  return out;
}

/** Comment and close: the same two calls on both forges. */
export function issueCalls(
  http: ForgeHttp,
  repo: string,
  pullSchema: z.ZodType,
): { comment(n: number, body: string): Promise<void>; close(n: number): Promise<void> } {
  return {
    async comment(n, body) {
      await http.json('POST', `${repo}/issues/${n}/comments`, commentId, { body });
    },
    async close(n) {
      await http.json('PATCH', `${repo}/pulls/${n}`, pullSchema, { state: 'closed' });
    },
  };
}
