/**
 * A real Gitea for a test file: scripts/gitea.sh starts it on a free loopback port with SQLite,
 * an admin user and an API token. One server per test file (start in `before`, `close` in
 * `after`); repositories are made through its API, branches pushed over its Git HTTP.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { runGit } from './git-server.js';

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, '..', '..');
const script = join(root, 'scripts', 'gitea.sh');

export interface TestGitea {
  dir: string;
  url: string;
  user: string;
  password: string;
  token: string;
  /** Calls Gitea's API as the admin; throws on a status other than 2xx. */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** The Git HTTP URL with the admin's credentials in it, for a person's `git push` in a test. */
  authedGitUrl(name: string): string;
  /**
   * Returns once Gitea has taken in the first push to the repository. Gitea clears a
   * repository's `empty` flag from its push queue, after `git push` has returned, and answers 404
   * to the pull-request API of an empty repository; on a busy machine the queue runs late.
   */
  pushed(name: string): Promise<void>;
  /**
   * A repository made and given its first commit by a person: `files` (paths relative to the
   * root) committed on `main` in a clone at `dir` (made if missing), pushed, and taken in by
   * Gitea (`pushed`). Returns the repository's Git HTTP URL (no credentials), for the
   * GitRepository; the clone stays the person's, for the test's own later commits.
   */
  seed(name: string, dir: string, files: Record<string, string>): Promise<string>;
  /** The Secrets pawl's configuration names: `git` (basic auth for Git HTTP) and `gitea-token` (the API). */
  secrets(): string;
  close(): Promise<void>;
}

export async function startGitea(): Promise<TestGitea> {
  const dir = await mkdtemp(join(tmpdir(), 'pawl-gitea-'));
  const down = async (): Promise<void> => {
    await exec('bash', [script, 'down', dir]);
  };
  let info: { url: string; user: string; password: string; token: string };
  try {
    await exec('bash', [script, 'up', dir], { maxBuffer: 1 << 24 });
    info = JSON.parse(await readFile(join(dir, 'gitea.json'), 'utf8')) as typeof info;
  } catch (err) {
    await down().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${info.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `token ${info.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`gitea ${method} ${path}: ${res.status} ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
  const host = new URL(info.url).host;
  const authedGitUrl = (name: string): string =>
    `http://${encodeURIComponent(info.user)}:${encodeURIComponent(info.password)}@${host}/${info.user}/${name}.git`;
  const pushed = async (name: string): Promise<void> => {
    // Polled: Gitea offers no event for its push queue. Each try is one request; the bound is
    // generous because only a failure takes it.
    for (let i = 0; i < 600; i++) {
      const repo = await api<{ empty: boolean }>('GET', `/repos/${info.user}/${name}`);
      if (!repo.empty) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`gitea: ${name} still empty 60 s after its first push`);
  };
  return {
    dir,
    ...info,
    api,
    authedGitUrl,
    pushed,
    seed: async (name, dir, files) => {
      const url = `${info.url}/${info.user}/${name}.git`;
      await api('POST', '/user/repos', { name, default_branch: 'main', auto_init: false });
      await mkdir(dir, { recursive: true });
      await runGit(['init', '--quiet', '-b', 'main'], dir);
      await runGit(['config', 'user.name', 'A Person'], dir);
      await runGit(['config', 'user.email', 'person@example.test'], dir);
      await runGit(['remote', 'add', 'origin', authedGitUrl(name)], dir);
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), text);
      }
      await runGit(['add', '.'], dir);
      await runGit(['commit', '--quiet', '-m', 'initial'], dir);
      await runGit(['push', '--quiet', 'origin', 'main'], dir);
      await pushed(name);
      return url;
    },
    secrets: () => `apiVersion: v1
kind: Secret
metadata: { name: git, namespace: flux-system }
type: kubernetes.io/basic-auth
stringData: { username: ${info.user}, password: ${info.password} }
---
apiVersion: v1
kind: Secret
metadata: { name: gitea-token, namespace: flux-system }
stringData: { token: ${info.token} }
`,
    close: async () => {
      await down();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
