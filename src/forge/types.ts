/**
 * The one interface pawl needs of a forge (GitHub, GitLab, Gitea/Forgejo): find its open pull
 * request for a branch, open one, update it, comment on it, close it. Each forge is one file
 * (gitea.ts, github.ts, gitlab.ts) with the response schema beside it.
 */
export type ForgeKind = 'gitea' | 'github' | 'gitlab';

export const FORGE_KINDS: readonly ForgeKind[] = ['gitea', 'github', 'gitlab'];

export interface PullRequest {
  /** The number people see (GitLab's `iid`). */
  number: number;
  url: string;
  state: 'open' | 'closed' | 'merged';
  /** The branch proposed, and the one it is proposed into. */
  head: string;
  base: string;
  title: string;
  body: string;
  labels: string[];
  /** The forge's global id where it has one apart from the number (GitHub's `node_id`, for GraphQL). */
  nodeId?: string;
}

export type MergeMethod = 'merge' | 'squash' | 'rebase';

/** Who is asked to review, and who is assigned: user names on the forge. */
export interface PullRequestPeople {
  reviewers: string[];
  assignees: string[];
}

export interface PullRequestFields {
  title: string;
  body: string;
  labels: string[];
}

export interface OpenPullRequest extends PullRequestFields {
  head: string;
  base: string;
  draft: boolean;
}

export interface ForgeClient {
  readonly kind: ForgeKind;
  /** Open pull requests into `base` (pawl's among them are told apart by their body's mark). */
  listOpen(base: string): Promise<PullRequest[]>;
  open(pr: OpenPullRequest): Promise<PullRequest>;
  /** Sets title, body and labels (labels replace the PR's labels). */
  update(number: number, fields: PullRequestFields): Promise<PullRequest>;
  comment(number: number, body: string): Promise<void>;
  close(number: number): Promise<void>;
  /** Requests reviews and assigns, by user name (GitLab looks the ids up). */
  addPeople(number: number, people: PullRequestPeople): Promise<void>;
  /** Merges by itself once the forge's checks pass (GitHub: GraphQL; GitLab, Gitea: REST). */
  autoMerge(pr: PullRequest, method: MergeMethod): Promise<void>;
}

/** Where a repository is on its forge, and how to reach its API. */
export interface ForgeRepo {
  kind: ForgeKind;
  /** The API's base URL, e.g. `https://api.github.com`, `https://gitlab.example.com/api/v4`. */
  apiUrl: string;
  /** `owner/name`; for GitLab the whole project path (`group/subgroup/project`). */
  path: string;
}
