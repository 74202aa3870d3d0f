/**
 * GitHub and GitHub Enterprise (REST v3). Labels go through the issues API (a PR is an issue);
 * draft is GitHub's own flag.
 */
import { ForgeHttp } from './http.js';
import { githubComment, githubLabels, githubPull, githubPulls, type GithubPull } from './github-schema.js';
import type { ForgeClient, PullRequest } from './types.js';

export function githubClient(http: ForgeHttp, apiUrl: string, path: string): ForgeClient {
  const repo = `${apiUrl}/repos/${path.split('/').map(encodeURIComponent).join('/')}`;
  const toPr = (p: GithubPull): PullRequest => ({
    number: p.number,
    url: p.html_url,
    state: p.merged_at ? 'merged' : p.state,
    head: p.head.ref,
    base: p.base.ref,
    title: p.title,
    body: p.body ?? '',
    labels: (p.labels ?? []).map((l) => l.name),
  });
  return {
    kind: 'github',
    async listOpen(base) {
      const out: PullRequest[] = [];
      for (let page = 1; page <= 10; page++) {
        const batch = await http.json(
          'GET',
          `${repo}/pulls?state=open&base=${encodeURIComponent(base)}&per_page=100&page=${page}`,
          githubPulls,
        );
        out.push(...batch.map(toPr));
        if (batch.length < 100) break;
      }
      return out;
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
    async comment(n, body) {
      await http.json('POST', `${repo}/issues/${n}/comments`, githubComment, { body });
    },
    async close(n) {
      await http.json('PATCH', `${repo}/pulls/${n}`, githubPull, { state: 'closed' });
    },
  };
}
