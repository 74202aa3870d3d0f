/**
 * GitHub and GitHub Enterprise (REST v3). Labels and assignees go through the issues API (a PR
 * is an issue); draft is GitHub's own flag. Auto-merge has no REST call: it is the GraphQL
 * mutation `enablePullRequestAutoMerge`, at `/graphql` (GitHub Enterprise: `/api/graphql`).
 */
import { ForgeError, ForgeHttp } from './http.js';
import { githubGraphql, githubLabels, githubPull, githubPulls, type GithubPull } from './github-schema.js';
import { allPages, issueCalls, repoUrl, toPullRequest } from './repo-api.js';
import type { ForgeClient, PullRequest } from './types.js';
import { z } from 'zod';

const anyObject = z.object({});

/** GitHub's GraphQL endpoint beside its REST base: api.github.com/graphql, HOST/api/graphql. */
export function githubGraphqlUrl(apiUrl: string): string {
  return /\/api\/v3$/.test(apiUrl) ? apiUrl.replace(/\/v3$/, '/graphql') : `${apiUrl}/graphql`;
}

export function githubClient(http: ForgeHttp, apiUrl: string, path: string): ForgeClient {
  const repo = repoUrl(apiUrl, path);
  const toPr = (p: GithubPull): PullRequest => ({
    ...toPullRequest(p, !!p.merged_at),
    ...(p.node_id ? { nodeId: p.node_id } : {}),
  });
  return {
    kind: 'github',
    ...issueCalls(http, repo, githubPull),
    async listOpen(base) {
      const pulls = await allPages(
        (page) =>
          http.json(
            'GET',
            `${repo}/pulls?state=open&base=${encodeURIComponent(base)}&per_page=100&page=${page}`,
            githubPulls,
          ),
        100,
        10,
      );
      return pulls.map(toPr);
    },
    async open(pr) {
      const created = toPr(
        await http.json('POST', `${repo}/pulls`, githubPull, {
          title: pr.title,
          head: pr.head,
          base: pr.base,
          body: pr.body,
          draft: pr.draft,
        }),
      );
      if (pr.labels.length === 0) return created;
      await http.json('POST', `${repo}/issues/${created.number}/labels`, githubLabels, { labels: pr.labels });
      return { ...created, labels: pr.labels };
    },
    async update(n, fields) {
      const updated = toPr(
        await http.json('PATCH', `${repo}/pulls/${n}`, githubPull, {
          title: fields.title,
          body: fields.body,
        }),
      );
      await http.json('PUT', `${repo}/issues/${n}/labels`, githubLabels, { labels: fields.labels });
      return { ...updated, labels: fields.labels };
    },
    async addPeople(n, { reviewers, assignees }) {
      if (reviewers.length > 0)
        await http.json('POST', `${repo}/pulls/${n}/requested_reviewers`, anyObject, { reviewers });
      if (assignees.length > 0)
        await http.json('POST', `${repo}/issues/${n}/assignees`, anyObject, { assignees });
    },
    async autoMerge(pr, method) {
      const url = githubGraphqlUrl(apiUrl);
      if (!pr.nodeId)
        throw new ForgeError(`POST ${url}: pull request #${pr.number} came without its node_id`, 0, false);
      const answer = await http.json('POST', url, githubGraphql, {
        query:
          'mutation($id: ID!, $method: PullRequestMergeMethod!) { enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method}) { clientMutationId } }',
        variables: { id: pr.nodeId, method: method.toUpperCase() },
      });
      if (answer.errors?.length)
        throw new ForgeError(
          `POST ${url}: auto-merge could not be enabled on #${pr.number}: ${answer.errors.map((e) => e.message).join('; ')}`,
          200,
          false,
        );
    },
  };
}
