/**
 * Gitea and Forgejo (`/api/v1`). Labels are set by id on create, so a label pawl is asked for
 * that the repository lacks is created first; a draft is a title starting `WIP:`, Gitea's way.
 */
import { ForgeHttp } from './http.js';
import {
  giteaComment,
  giteaLabel,
  giteaLabels,
  giteaPull,
  giteaPulls,
  type GiteaPull,
} from './gitea-schema.js';
import type { ForgeClient, OpenPullRequest, PullRequest, PullRequestFields } from './types.js';

const LABEL_COLOR = '#0e8a16';

export function giteaClient(http: ForgeHttp, apiUrl: string, path: string): ForgeClient {
  const repo = `${apiUrl}/repos/${path.split('/').map(encodeURIComponent).join('/')}`;
  const toPr = (p: GiteaPull): PullRequest => ({
    number: p.number,
    url: p.html_url,
    state: p.merged ? 'merged' : p.state,
    head: p.head.ref,
    base: p.base.ref,
    title: p.title,
    body: p.body ?? '',
    labels: (p.labels ?? []).map((l) => l.name),
  });
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
    async listOpen(base) {
      const out: PullRequest[] = [];
      for (let page = 1; page <= 20; page++) {
        const batch = await http.json('GET', `${repo}/pulls?state=open&limit=50&page=${page}`, giteaPulls);
        out.push(...batch.map(toPr).filter((p) => p.base === base));
        if (batch.length < 50) break;
      }
      return out;
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
    async comment(n: number, body: string) {
      await http.json('POST', `${repo}/issues/${n}/comments`, giteaComment, { body });
    },
    async close(n: number) {
      await http.json('PATCH', `${repo}/pulls/${n}`, giteaPull, { state: 'closed' });
    },
  };
}
