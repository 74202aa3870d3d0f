/**
 * A real smart-HTTP git server for tests: `git http-backend` run as CGI behind Node's http,
 * with optional Basic auth, serving bare repositories from a temporary directory.
 *
 * Races are injected deterministically with `beforePush`: the callback runs when a client
 * starts a push (its `info/refs?service=git-receive-pack` request), before the server
 * advertises its refs, so anything the callback commits is "another writer who pushed
 * between pawl's fetch and pawl's push".
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile, chmod, readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** Environment for the server's own git calls: no user or system config, no prompts. */
export const SERVER_GIT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  LC_ALL: 'C',
};

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('GIT_')) continue;
    env[k] = v;
  }
  return { ...env, ...SERVER_GIT_ENV, ...extra };
}

/** Runs git with a clean environment; for test fixtures, not for pawl itself. */
export async function runGit(args: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const { stdout } = await execFileP('git', args, { cwd, env: cleanEnv(env), maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

export interface CommitInfo {
  sha: string;
  subject: string;
  body: string;
  authorName: string;
  authorEmail: string;
  committerName: string;
  committerEmail: string;
  parents: string[];
}

export interface PushInfo {
  /** How many pushes to this repository have started so far, this one included (1-based). */
  count: number;
  repo: string;
}

export type PushHook = (info: PushInfo) => void | Promise<void>;

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  user: string | null;
  status: number;
}

export interface GitServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** Directory holding the bare repositories (`<root>/<name>.git`). */
  readonly root: string;
  /** Every request served, in order (for asserting that credentials were used). */
  readonly requests: RequestRecord[];
  /** `http://127.0.0.1:PORT/<name>.git` (no credentials in it). */
  cloneUrl(name: string): string;
  /** Filesystem path of the bare repository, usable as a `file://` or local-path remote. */
  repoPath(name: string): string;
  /** Create `<name>.git` whose branch holds exactly `files` in one commit; returns that commit. */
  createBareRepo(
    name: string,
    files: Record<string, string>,
    opts?: { branch?: string; message?: string },
  ): Promise<string>;
  /**
   * Commit straight into the bare repository, as another writer would (no hooks run).
   * `null` deletes a file. Creates the branch when missing (from `from`, default: empty tree).
   */
  commitFiles(
    name: string,
    branch: string,
    files: Record<string, string | Buffer | null>,
    opts?: { message?: string; author?: { name: string; email: string }; from?: string },
  ): Promise<string>;
  /** Create a lightweight tag pointing at `rev`. */
  tag(name: string, tagName: string, rev: string): Promise<void>;
  /** A pre-receive hook declines every update of `branch`, as a protected branch does. */
  protectBranch(name: string, branch: string): Promise<void>;
  /**
   * Run `hook` when a push to `name` starts, before refs are advertised (stage `advertise`,
   * the default: the client then sees the new commit and is rejected with "fetch first"), or
   * after the client chose its old value but before the server applies it (stage `receive`:
   * the server then fails to lock the ref). `null` removes the hook.
   */
  beforePush(name: string, hook: PushHook | null, opts?: { stage?: 'advertise' | 'receive' }): void;
  /** Commits reachable from `branch`, newest first. */
  log(name: string, branch: string): Promise<CommitInfo[]>;
  /** Content of `path` at `rev`. */
  show(name: string, rev: string, path: string): Promise<string>;
  /** The sha `ref` points to, or null when it does not exist. */
  revParse(name: string, ref: string): Promise<string | null>;
  /** Add a user, change a password, or (with null) remove a user; turns auth on when it was off. */
  setUser(user: string, password: string | null): void;
  /** Stop serving (also stops answering; later requests get connection refused). */
  close(): Promise<void>;
}

export interface GitServerOptions {
  /** Basic-auth users (name → password). When given, every request needs valid credentials. */
  users?: Record<string, string>;
  /** Bearer tokens accepted (`Authorization: Bearer …`); the request's user is `token`. */
  tokens?: string[];
}

const FIXED_DATE = '2024-01-01T00:00:00Z';

export async function startGitServer(opts: GitServerOptions = {}): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), 'pawl-git-server-'));
  let users: Map<string, string> | undefined = opts.users ? new Map(Object.entries(opts.users)) : undefined;
  const hooks = new Map<string, { hook: PushHook; stage: 'advertise' | 'receive' }>();
  const pushCounts = new Map<string, number>();
  const requests: RequestRecord[] = [];
  const backend = await execFileP('git', ['--exec-path'], { env: cleanEnv() }).then((r) =>
    join(r.stdout.trim(), 'git-http-backend'),
  );

  const repoPath = (name: string): string => join(root, `${name}.git`);

  function authenticate(req: IncomingMessage): string | null | false {
    const header = req.headers.authorization ?? '';
    const bearer = /^Bearer\s+(.+)$/i.exec(header);
    if (bearer && opts.tokens?.includes(bearer[1]!)) return 'token';
    if (!users && !opts.tokens) return null;
    if (!users) return false;
    const m = /^Basic\s+(.+)$/i.exec(header);
    if (!m) return false;
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0) return false;
    const user = decoded.slice(0, i);
    const pass = decoded.slice(i + 1);
    return users.get(user) === pass ? user : false;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const record: RequestRecord = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.slice(1),
      user: null,
      status: 0,
    };
    requests.push(record);
    const user = authenticate(req);
    if (user === false) {
      record.status = 401;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="pawl-test"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      req.resume();
      return;
    }
    record.user = user;

    const repoMatch = /^\/([^/]+)\.git\//.exec(url.pathname);
    const repoName = repoMatch?.[1];
    const advertise =
      req.method === 'GET' &&
      url.pathname.endsWith('/info/refs') &&
      url.searchParams.get('service') === 'git-receive-pack';
    const receive = req.method === 'POST' && url.pathname.endsWith('/git-receive-pack');
    if (repoName && advertise) pushCounts.set(repoName, (pushCounts.get(repoName) ?? 0) + 1);
    const registered = repoName ? hooks.get(repoName) : undefined;
    if (
      repoName &&
      registered &&
      ((advertise && registered.stage === 'advertise') || (receive && registered.stage === 'receive'))
    ) {
      await registered.hook({ count: pushCounts.get(repoName) ?? 0, repo: repoName });
    }

    const env = cleanEnv({
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      ...(user ? { REMOTE_USER: user } : {}),
      ...(req.headers['content-encoding']
        ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) }
        : {}),
      ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      ...(req.headers['content-length'] ? { CONTENT_LENGTH: String(req.headers['content-length']) } : {}),
    });
    const child = spawn(backend, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    req.pipe(child.stdin);
    child.stdin.on('error', () => undefined);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));

    // CGI response: headers, a blank line, then the body, streamed.
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      let sep = head.indexOf('\r\n\r\n');
      let sepLen = 4;
      if (sep < 0) {
        sep = head.indexOf('\n\n');
        sepLen = 2;
      }
      if (sep < 0) return;
      headersDone = true;
      const lines = head.subarray(0, sep).toString('latin1').split(/\r?\n/);
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10) || 200;
        else headers[k] = v;
      }
      record.status = status;
      res.writeHead(status, headers);
      res.write(head.subarray(sep + sepLen));
    });
    await new Promise<void>((resolve) => {
      child.on('close', (code) => {
        if (!headersDone) {
          record.status = 500;
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          res.end(`http-backend failed (${code}): ${stderr}`);
        } else {
          res.end();
        }
        resolve();
      });
    });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  const fixtureEnv = (author?: { name: string; email: string }): Record<string, string> => ({
    GIT_AUTHOR_NAME: author?.name ?? 'Other Writer',
    GIT_AUTHOR_EMAIL: author?.email ?? 'other@example.com',
    GIT_COMMITTER_NAME: author?.name ?? 'Other Writer',
    GIT_COMMITTER_EMAIL: author?.email ?? 'other@example.com',
    GIT_AUTHOR_DATE: FIXED_DATE,
    GIT_COMMITTER_DATE: FIXED_DATE,
  });

  async function revParse(name: string, ref: string): Promise<string | null> {
    try {
      return (
        (await runGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], repoPath(name))).trim() || null
      );
    } catch {
      return null;
    }
  }

  async function commitFiles(
    name: string,
    branch: string,
    files: Record<string, string | Buffer | null>,
    o: { message?: string; author?: { name: string; email: string }; from?: string } = {},
  ): Promise<string> {
    const dir = repoPath(name);
    const work = await mkdtemp(join(tmpdir(), 'pawl-git-index-'));
    try {
      const index = { GIT_INDEX_FILE: join(work, 'index') };
      const current = await revParse(name, `refs/heads/${branch}`);
      const parent = current ?? (o.from ? await revParse(name, o.from) : null);
      if (parent) await runGit(['read-tree', parent], dir, index);
      for (const [path, content] of Object.entries(files)) {
        if (content === null) {
          await runGit(['update-index', '--force-remove', '--', path], dir, index);
          continue;
        }
        const blobFile = join(work, 'blob');
        await writeFile(blobFile, content);
        const blob = (await runGit(['hash-object', '-w', '--', blobFile], dir)).trim();
        await runGit(['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], dir, index);
      }
      const tree = (await runGit(['write-tree'], dir, index)).trim();
      const args = ['commit-tree', tree, '-m', o.message ?? `update ${Object.keys(files).join(', ')}`];
      if (parent) args.push('-p', parent);
      const sha = (await runGit(args, dir, fixtureEnv(o.author))).trim();
      // The old value makes a concurrent writer fail loudly instead of being lost.
      await runGit(['update-ref', `refs/heads/${branch}`, sha, current ?? ''], dir);
      return sha;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  return {
    url: base,
    root,
    requests,
    cloneUrl: (name) => `${base}/${name}.git`,
    repoPath,
    async createBareRepo(name, files, o = {}) {
      const branch = o.branch ?? 'main';
      const dir = repoPath(name);
      await mkdir(dir, { recursive: true });
      await runGit(['init', '--bare', '--quiet', `--initial-branch=${branch}`, dir], root);
      await runGit(['config', 'http.receivepack', 'true'], dir);
      // Keep objects loose and refs unpacked so direct writes and pushes interleave simply.
      await runGit(['config', 'receive.unpackLimit', '1000'], dir);
      await runGit(['config', 'receive.advertisePushOptions', 'true'], dir);
      return commitFiles(name, branch, files, { message: o.message ?? 'initial commit' });
    },
    commitFiles,
    async tag(name, tagName, rev) {
      await runGit(['update-ref', `refs/tags/${tagName}`, rev], repoPath(name));
    },
    async protectBranch(name, branch) {
      const dir = repoPath(name);
      const list = join(dir, 'protected-branches');
      let existing = '';
      try {
        existing = await readFile(list, 'utf8');
      } catch {
        existing = '';
      }
      await writeFile(list, `${existing}refs/heads/${branch}\n`);
      const hook = join(dir, 'hooks', 'pre-receive');
      await mkdir(join(dir, 'hooks'), { recursive: true });
      await writeFile(
        hook,
        [
          '#!/bin/sh',
          'while read old new ref; do',
          '  if grep -qxF "$ref" "$GIT_DIR/protected-branches"; then',
          '    echo "GH006: Protected branch update failed for $ref." >&2',
          '    exit 1',
          '  fi',
          'done',
          'exit 0',
          '',
        ].join('\n'),
      );
      await chmod(hook, 0o755);
    },
    beforePush(name, hook, o = {}) {
      if (hook) hooks.set(name, { hook, stage: o.stage ?? 'advertise' });
      else hooks.delete(name);
    },
    async log(name, branch) {
      const sep = '\x1e';
      const out = await runGit(
        [
          'log',
          '--format=%H%x1f%s%x1f%b%x1f%an%x1f%ae%x1f%cn%x1f%ce%x1f%P%x1e',
          `refs/heads/${branch}`,
          '--',
        ],
        repoPath(name),
      );
      return out
        .split(sep)
        .map((s) => s.replace(/^\n/, ''))
        .filter((s) => s.length > 0)
        .map((s) => {
          const [sha, subject, body, an, ae, cn, ce, parents] = s.split('\x1f');
          return {
            sha: sha!,
            subject: subject ?? '',
            body: (body ?? '').trim(),
            authorName: an ?? '',
            authorEmail: ae ?? '',
            committerName: cn ?? '',
            committerEmail: ce ?? '',
            parents: (parents ?? '').trim().split(' ').filter(Boolean),
          };
        });
    },
    async show(name, rev, path) {
      return runGit(['show', `${rev}:${path}`], repoPath(name));
    },
    revParse,
    setUser(user, password) {
      users ??= new Map();
      if (password === null) users.delete(user);
      else users.set(user, password);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}
