/**
 * The Git layer over loopback smart HTTP with Basic auth (the test server: `git http-backend`
 * behind Node's http): a repository of 500 manifests (plus 200 commits of history), then
 * cold open (clone + checkout), warm open (fetch, nothing new), commit of 500 changed files,
 * push, and a push race resolved by pushWithRetry. Prints wall times and this process's peak
 * RSS (git runs in child processes). Asserts nothing.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startGitServer } from '../test/helpers/git-server.js';
import { gitRepository, secret, tempDir } from '../test/git/fixtures.js';
import { openWorkspace, type Workspace } from '../src/git/workspace.js';
import { commit } from '../src/git/commit.js';
import { push, pushWithRetry } from '../src/git/push.js';
import { silentLogger } from '../src/util/log.js';

const FILES = 500;
const HISTORY = 200;

function manifest(i: number, tag: string): string {
  return [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata:',
    `  name: app-${i}`,
    'spec:',
    '  template:',
    '    spec:',
    '      containers:',
    `        - name: app-${i}`,
    `          image: registry.example.com/team/app-${i}:${tag} # {"$imagepolicy": "apps:app-${i}"}`,
    '',
  ].join('\n');
}

async function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const r = await fn();
  console.log(`${label.padEnd(44)} ${(performance.now() - t0).toFixed(0).padStart(6)} ms`);
  return r;
}

const server = await startGitServer({ users: { bot: 'bench-pw' } });
const state = await tempDir('pawl-git-bench-');
const creds = secret('creds', { username: 'bot', password: 'bench-pw' });
try {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`apps/app-${i}/deploy.yaml`] = manifest(i, '1.0.0');
  await server.createBareRepo('bench', files);
  for (let h = 0; h < HISTORY; h++) {
    await server.commitFiles(
      'bench',
      'main',
      { [`apps/app-${h % FILES}/notes.txt`]: `note ${h}\n` },
      { message: `history ${h}` },
    );
  }
  const repo = gitRepository(server.cloneUrl('bench'), { name: 'bench' });
  const open = (): Promise<Workspace> =>
    openWorkspace({ stateDir: state.dir, repo, secret: creds, log: silentLogger });

  await timed(`cold open (clone ${FILES} files, ${HISTORY + 1} commits)`, open);
  const ws = await timed('warm open (fetch, nothing new)', open);
  await server.commitFiles('bench', 'main', { 'README.md': 'new\n' }, { message: 'someone' });
  await timed('warm open (fetch one new commit)', open);
  for (let i = 0; i < FILES; i++)
    await writeFile(join(ws.dir, `apps/app-${i}/deploy.yaml`), manifest(i, '1.1.0'));
  await timed(`commit ${FILES} changed files`, () =>
    commit(ws, {
      message: 'bump',
      author: { name: 'Bot', email: 'bot@example.com' },
      automation: 'apps/auto',
    }),
  );
  await timed('push', () => push(ws));

  let tag = 2;
  server.beforePush('bench', async ({ count }) => {
    if (count === 2)
      await server.commitFiles('bench', 'main', { 'README.md': 'race\n' }, { message: 'other writer' });
  });
  const result = await timed('pushWithRetry with one race (2 attempts)', () =>
    pushWithRetry(ws, async (w) => {
      tag++;
      for (let i = 0; i < 20; i++)
        await writeFile(join(w.dir, `apps/app-${i}/deploy.yaml`), manifest(i, `1.${tag}.0`));
      return commit(w, { message: 'bump', author: { name: 'Bot', email: 'bot@example.com' } });
    }),
  );
  console.log(`  → pushed=${result.pushed} attempts=${result.attempts}`);
  console.log(
    `peak RSS (node process)                      ${(process.resourceUsage().maxRSS / 1024).toFixed(0).padStart(6)} MB`,
  );
} finally {
  await server.close();
  await state.cleanup();
}
