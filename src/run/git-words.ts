/**
 * A git failure in words a person can act on (issue 23, item 7): which GitRepository, its URL
 * (credentials removed), which Secret, and what to do. git's command line — thirty `-c` flags
 * of pawl's own — says none of that; it goes to the debug log only.
 */
import { refKey, type GitRepository } from '../config/index.js';
import type { GitError } from '../git/index.js';
import { redactUrl, type Logger } from '../util/index.js';

export function gitFailureWords(err: GitError, repo: GitRepository | undefined, log?: Logger): string {
  log?.debug({ command: err.command, exitCode: err.gitExitCode }, 'git command failed');
  if (!repo) return err.stderr || err.message;
  const name = refKey(repo.metadata);
  const secret = repo.spec.secretRef ? `Secret ${repo.metadata.namespace}/${repo.spec.secretRef}` : undefined;
  const ssh = /^ssh:\/\//i.test(repo.spec.url) || /^[^@/:]+@[^:/]+:/.test(repo.spec.url);
  const head = `GitRepository ${name} (${redactUrl(repo.spec.url)})`;
  const said = err.stderr ? `; git said: ${err.stderr.split('\n').join(' / ')}` : '';
  switch (err.failure) {
    case 'auth': {
      if (/host key verification failed/i.test(err.stderr))
        return `${head}: the SSH host key did not match known_hosts${secret ? ` in ${secret}` : ''}; put the server's current key in known_hosts (ssh-keyscan HOST)${said}`;
      const what = ssh
        ? 'the SSH private key in "identity" (and "known_hosts")'
        : '"username" and "password" (a token with write access), or "bearerToken"';
      return secret
        ? `${head}: authentication failed with the credentials of ${secret}; check ${what} there, then run again${said}`
        : `${head}: authentication failed and the GitRepository names no Secret; set spec.secretRef to a Secret with ${what}${said}`;
    }
    case 'not-found':
      return `${head}: not found on the server; check spec.url${secret ? '' : ' (a private repository answers "not found" to a request without credentials: set spec.secretRef)'}${said}`;
    case 'unreachable':
      return `${head}: the git server is unreachable; check the host in spec.url and the network${said}`;
    case 'timeout':
      return `${head}: git timed out; check the network, or the size of the repository${said}`;
    default:
      return `${head}: git failed${said || `: ${err.message.startsWith(err.command) ? err.message.slice(err.command.length + 2) : err.message}`}`;
  }
}
