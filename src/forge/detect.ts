/**
 * Which forge a GitRepository is on, and where its API is: stated (`pullRequest.provider`,
 * `pullRequest.apiURL`), or known from the host (github.com, gitlab.com). Gitea and Forgejo
 * serve their API under the web root (`/api/v1`), GitLab under `/api/v4`, GitHub Enterprise
 * under `/api/v3`.
 */
import type { ForgeKind, ForgeRepo } from './types.js';

/** Host and path of a Git URL: `https://host/a/b.git`, `ssh://git@host/a/b`, `git@host:a/b.git`. */
export function gitUrlParts(url: string): { scheme: string; host: string; path: string } | null {
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(url);
  if (scp && !url.includes('://')) return { scheme: 'https', host: scp[1]!, path: trimPath(scp[2]!) };
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const scheme = u.protocol === 'http:' ? 'http' : 'https';
  // An ssh URL's port is sshd's, not the web server's.
  const host = u.protocol === 'ssh:' ? u.hostname : u.host;
  return { scheme, host, path: trimPath(decodeURIComponent(u.pathname)) };
}

function trimPath(p: string): string {
  return p
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

export function forgeKindOfHost(host: string): ForgeKind | null {
  const h = host.toLowerCase();
  if (h === 'github.com' || h === 'www.github.com') return 'github';
  if (h === 'gitlab.com') return 'gitlab';
  if (h === 'codeberg.org' || h === 'gitea.com') return 'gitea';
  return null;
}

/**
 * The forge repository for a GitRepository URL; a string says why there is none (for the
 * user, naming what to set).
 */
export function forgeRepo(
  gitUrl: string,
  stated: { provider?: ForgeKind; apiURL?: string },
): ForgeRepo | string {
  const parts = gitUrlParts(gitUrl);
  if (!parts) return `cannot read the repository's host and path from its URL "${gitUrl}"`;
  const kind = stated.provider ?? forgeKindOfHost(parts.host);
  if (!kind)
    return `cannot tell which forge ${parts.host} is; set pullRequest.provider (github, gitlab or gitea)`;
  let path = parts.path;
  let webRoot = `${parts.scheme}://${parts.host}`;
  if (kind === 'gitea' && !stated.apiURL) {
    // Gitea under a sub-path (https://host/git/owner/repo): the repository is the last two parts.
    const segs = path.split('/');
    if (segs.length > 2) {
      webRoot += `/${segs.slice(0, -2).join('/')}`;
      path = segs.slice(-2).join('/');
    }
  }
  if (!path.includes('/')) return `the repository URL "${gitUrl}" names no owner/repository`;
  const apiUrl =
    stated.apiURL?.replace(/\/+$/, '') ??
    (kind === 'github'
      ? parts.host.toLowerCase() === 'github.com'
        ? 'https://api.github.com'
        : `${webRoot}/api/v3`
      : kind === 'gitlab'
        ? `${webRoot}/api/v4`
        : `${webRoot}/api/v1`);
  return { kind, apiUrl, path };
}
