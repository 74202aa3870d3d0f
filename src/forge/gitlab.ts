/**
 * GitLab.com and self-managed GitLab (REST v4): merge requests by the project's full path;
 * draft is a `Draft:` title, labels a list; reviewers and assignees are user ids, looked up by
 * name; auto-merge is the merge call with `auto_merge` (`merge_when_pipeline_succeeds` before
 * GitLab 17, sent too).
 */
import { ForgeError, ForgeHttp } from './http.js';
import {
  gitlabMergeRequest,
  gitlabMergeRequests,
  gitlabNote,
  gitlabUsers,
  type GitlabMergeRequest,
} from './gitlab-schema.js';
import { allPages } from './repo-api.js';
import type { ForgeClient, PullRequest } from './types.js';

export function gitlabClient(http: ForgeHttp, apiUrl: string, path: string): ForgeClient {
  const project = `${apiUrl}/projects/${encodeURIComponent(path)}`;
  const toPr = (m: GitlabMergeRequest): PullRequest => ({
    number: m.iid,
    url: m.web_url,
    state: m.state === 'opened' ? 'open' : m.state === 'merged' ? 'merged' : 'closed',
    head: m.source_branch,
    base: m.target_branch,
    title: m.title,
    body: m.description ?? '',
    labels: m.labels ?? [],
  });
  const userIds = async (names: string[]): Promise<number[]> => {
    const ids: number[] = [];
    for (const name of names) {
      const url = `${apiUrl}/users?username=${encodeURIComponent(name)}`;
      const found = (await http.json('GET', url, gitlabUsers)).find((u) => u.username === name);
      if (!found) throw new ForgeError(`GET ${url}: GitLab has no user named "${name}"`, 200, false);
      ids.push(found.id);
    }
    return ids;
  };
  const mr = (n: number): string => `${project}/merge_requests/${n}`;
  return {
    kind: 'gitlab',
    async listOpen(base) {
      const mrs = await allPages(
        (page) =>
          http.json(
            'GET',
            `${project}/merge_requests?state=opened&target_branch=${encodeURIComponent(base)}&per_page=100&page=${page}`,
            gitlabMergeRequests,
          ),
        100,
        10,
      );
      return mrs.map(toPr);
    },
    async open(pr) {
      return toPr(
        await http.json('POST', `${project}/merge_requests`, gitlabMergeRequest, {
          source_branch: pr.head,
          target_branch: pr.base,
          title: pr.draft ? `Draft: ${pr.title}` : pr.title,
          description: pr.body,
          labels: pr.labels,
          remove_source_branch: true,
        }),
      );
    },
    async update(n, fields) {
      return toPr(
        await http.json('PUT', mr(n), gitlabMergeRequest, {
          title: fields.title,
          description: fields.body,
          labels: fields.labels,
        }),
      );
    },
    async comment(n, body) {
      await http.json('POST', `${mr(n)}/notes`, gitlabNote, { body });
    },
    async close(n) {
      await http.json('PUT', mr(n), gitlabMergeRequest, { state_event: 'close' });
    },
    async addPeople(n, { reviewers, assignees }) {
      if (reviewers.length === 0 && assignees.length === 0) return;
      await http.json('PUT', mr(n), gitlabMergeRequest, {
        ...(reviewers.length > 0 ? { reviewer_ids: await userIds(reviewers) } : {}),
        ...(assignees.length > 0 ? { assignee_ids: await userIds(assignees) } : {}),
      });
    },
    async autoMerge(pr, method) {
      // GitLab has no per-request rebase: the project's merge method decides; squash is asked.
      await http.json('PUT', `${mr(pr.number)}/merge`, gitlabMergeRequest, {
        auto_merge: true,
        merge_when_pipeline_succeeds: true,
        ...(method === 'squash' ? { squash: true } : {}),
      });
    },
  };
}
