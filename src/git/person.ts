/**
 * Who asked for a commit pawl makes on a person's behalf (`pawl rollback`): the person is the
 * commit's author and the automation's identity its committer, as `git commit --author` and
 * GitHub's "X authored and pawl committed" show it. Found the way `git commit` finds an author:
 * `--author`, then GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL, then `git config user.name`/`user.email`.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { UsageError } from '../util/index.js';
import type { Identity } from './commit.js';

const execFileP = promisify(execFile);

/** Where the person came from, for the command's words. */
export type PersonSource = '--author' | 'GIT_AUTHOR_NAME' | 'git config';

/** `Name <email>`, as git writes an identity; null when the text is not one. */
export function parseIdentity(text: string): Identity | null {
  const m = /^\s*([^<>\n]*?)\s*<([^<>\s]+)>\s*$/.exec(text);
  if (!m || m[1] === '' || m[2] === '') return null;
  return { name: m[1]!, email: m[2]! };
}

async function gitConfig(key: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  try {
    const { stdout } = await execFileP('git', ['config', '--get', key], { cwd, env, timeout: 10_000 });
    const v = stdout.trim();
    return v === '' ? null : v;
  } catch {
    // Unset (exit 1), or git missing: nobody is known, which the caller says.
    return null;
  }
}

/**
 * The person, or null when none is known. `author` is `--author`'s text: not an identity is
 * bad usage (exit 2), naming the flag.
 */
export async function findPerson(opts: {
  author?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}): Promise<{ identity: Identity; from: PersonSource } | null> {
  if (opts.author !== undefined) {
    const identity = parseIdentity(opts.author);
    if (!identity)
      throw new UsageError(
        `--author ${JSON.stringify(opts.author)} is not "Name <email>" (e.g. --author "Dana Dev <dana@example.com>")`,
      );
    return { identity, from: '--author' };
  }
  const env = opts.env ?? process.env;
  const name = env.GIT_AUTHOR_NAME?.trim();
  const email = env.GIT_AUTHOR_EMAIL?.trim();
  if (name && email) return { identity: { name, email }, from: 'GIT_AUTHOR_NAME' };
  const cwd = opts.cwd ?? process.cwd();
  const [cname, cemail] = await Promise.all([
    gitConfig('user.name', cwd, env),
    gitConfig('user.email', cwd, env),
  ]);
  if (cname && cemail) return { identity: { name: cname, email: cemail }, from: 'git config' };
  return null;
}
