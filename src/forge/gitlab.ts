/**
 * GitLab.com and self-managed GitLab (REST v4): merge requests by the project's full path;
 * draft is a `Draft:` title, labels a comma-separated list.
 */
import { ForgeHttp } from './http.js';
import {
  gitlabMergeRequest,
  gitlabMergeRequests,
  gitlabNote,
  type GitlabMergeRequest,
} from './gitlab-schema.js';
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
  return {
    kind: 'gitlab',
    async listOpen(base) {
      const out: PullRequest[] = [];
      for (let page = 1; page <= 10; page++) {
        const batch = await http.json(
          'GET',
          `${project}/merge_requests?state=opened&target_branch=${encodeURIComponent(base)}&per_page=100&page=${page}`,
          gitlabMergeRequests,
        );
        out.push(...batch.map(toPr));
        if (batch.length < 100) break;
      }
      return out;
    },
    async open(pr) {
      return toPr(
        await http.json('POST', `${project}/merge_requests`, gitlabMergeRequest, {
          source_branch: pr.head,
          target_branch: pr.base,
          title: pr.draft ? `Draft: ${pr.title}` : pr.title,
          description: pr.body,
          labels: pr.labels.join(','),
          remove_source_branch: true,
        }),
      );
    },
    async update(n, fields) {
      return toPr(
        await http.json('PUT', `${project}/merge_requests/${n}`, gitlabMergeRequest, {
          title: fields.title,
          description: fields.body,
          labels: fields.labels.join(','),
        }),
      );
    },
    async comment(n, body) {
      await http.json('POST', `${project}/merge_requests/${n}/notes`, gitlabNote, { body });
    },
    async close(n) {
      await http.json('PUT', `${project}/merge_requests/${n}`, gitlabMergeRequest, { state_event: 'close' });
    },
  };
}
