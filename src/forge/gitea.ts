/**
 * Gitea and Forgejo (`/api/v1`). Labels are set by id on create, so a label pawl is asked for
 * that the repository lacks is created first; a draft is a title starting `WIP:`, Gitea's way;
 * auto-merge is the merge call with `merge_when_checks_succeed`.
 */
import { ForgeHttp } from './http.js';
import { giteaLabel, giteaLabels, giteaPull, giteaPulls, type GiteaPull } from './gitea-schema.js';
import { allPages, issueCalls, repoUrl, toPullRequest } from './repo-api.js';
import type { ForgeClient, OpenPullRequest, PullRequest, PullRequestFields } from './types.js';

const LABEL_COLOR = '#0e8a16';

export function giteaClient(http: ForgeHttp, apiUrl: string, path: string): ForgeClient {
  const repo = repoUrl(apiUrl, path);
  const toPr = (p: GiteaPull): PullRequest => toPullRequest(p, !!p.merged);
  const labelIds = async (names: string[]): Promise<number[]> => {
    if (names.length === 0) return [];
    const have = await http.json('GET', `${repo}/labels?limit=50`, giteaLabels);
    const ids: number[] = [];
    for (const name of names) {
      const found = have.find((l) => l.name === name);
      ids.push(
        found
          ? found.id
          : (await http.json('POST', `${repo}/labels`, giteaLabel, { name, color: LABEL_COLOR })).id,
      );
    }
    return ids;
  };
  const get = async (n: number): Promise<PullRequest> =>
    toPr(await http.json('GET', `${repo}/pulls/${n}`, giteaPull));
  return {
    kind: 'gitea',
    ...issueCalls(http, repo, giteaPull),
    async listOpen(base) {
      const pulls = await allPages(
        (page) => http.json('GET', `${repo}/pulls?state=open&limit=50&page=${page}`, giteaPulls),
        50,
        20,
      );
      return pulls.map(toPr).filter((p) => p.base === base);
    },
    async open(pr: OpenPullRequest) {
      const labels = await labelIds(pr.labels);
      const created = await http.json('POST', `${repo}/pulls`, giteaPull, {
        head: pr.head,
        base: pr.base,
        title: pr.draft ? `WIP: ${pr.title}` : pr.title,
        body: pr.body,
        labels,
      });
      return toPr(created);
    },
    async update(n: number, fields: PullRequestFields) {
      const current = await get(n);
      // Keep a person's `WIP:` (draft) as it is: only the words after it are pawl's.
      const wip = /^(?:WIP:|\[WIP\])\s*/i.exec(current.title)?.[0] ?? '';
      await http.json('PATCH', `${repo}/pulls/${n}`, giteaPull, {
        title: `${wip}${fields.title}`,
        body: fields.body,
      });
      await http.json('PUT', `${repo}/issues/${n}/labels`, giteaLabels, {
        labels: await labelIds(fields.labels),
      });
      return get(n);
    },
    async addPeople(n, { reviewers, assignees }) {
      if (assignees.length > 0) await http.json('PATCH', `${repo}/pulls/${n}`, giteaPull, { assignees });
      if (reviewers.length > 0)
        await http.json('POST', `${repo}/pulls/${n}/requested_reviewers`, null, { reviewers });
    },
    async autoMerge(pr, method) {
      await http.json('POST', `${repo}/pulls/${pr.number}/merge`, null, {
        Do: method,
        merge_when_checks_succeed: true,
      });
    },
  };
}
