/**
 * A webhook answered 202 is not lost when the daemon dies right after (issue 22): `kill -9` of
 * the real `pawl serve` process within 100 ms of the answer — while the work is still queued, or
 * while the scan it triggered is running (the registry's tag list is held) — then a start on the
 * same state directory. The tag reaches the git remote every time, with every interval an hour
 * long: only the accepted webhook can have brought it.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pushTags } from '../helpers/push.js';
import { eventually, startServe, type ServeProcess } from '../helpers/serve.js';
import type { World } from '../helpers/world.js';
import { HOOK_PATH, RECEIVER_YAML, oneAppWorld, postEvent } from './fixtures.js';

const ROUNDS = 10;

/** Sends SIGKILL after a pause of 0–100 ms (the pause is the scenario, not a timing assertion). */
async function killSoon(serve: ServeProcess): Promise<void> {
  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 100)));
  serve.child.kill('SIGKILL');
  const { signal } = await serve.exited;
  assert.equal(signal, 'SIGKILL');
}

/** Git world behind the fault proxy (images named with its host); the test sends the webhooks. */
const crashWorld = (): Promise<World> =>
  oneAppWorld({ proxy: true, extra: { 'receiver.yaml': RECEIVER_YAML }, tags: ['1.0.0'] });

/** The tag the remote's apps/app.yaml names now. */
async function remoteTag(w: World): Promise<string | undefined> {
  const [head] = await w.git.log(w.repoName, 'main');
  if (!head) return undefined;
  return /team\/app:(\S+) #/.exec(await w.git.show(w.repoName, head.sha, 'apps/app.yaml'))?.[1];
}

describe('kill -9 right after a webhook is accepted (SQLite)', () => {
  let w: World | undefined;
  let serve: ServeProcess | undefined;
  after(async () => {
    await serve?.stop('SIGKILL');
    await w?.close();
  });

  test(`the restarted daemon pushes the tag, ${ROUNDS} rounds out of ${ROUNDS}`, async () => {
    w = await crashWorld();
    const start = () => startServe({ configDir: w!.configDir, stateDir: w!.stateDir });
    serve = await start();
    await serve.waitForLog((r) => r.msg === 'pass' && r.automation === 'flux-system/fleet', 'first pass');
    for (let round = 1; round <= ROUNDS; round++) {
      const tag = `1.${round}.0`;
      await pushTags(w.registry.url, 'team/app', [tag]);
      // The scan the webhook starts cannot finish before the kill.
      w.proxy!.addFault({ kind: 'tags', repo: 'team/app', action: { hang: true } });
      assert.equal(await postEvent(serve.hookUrl(HOOK_PATH), tag), 202, `round ${round}: accepted`);
      await killSoon(serve);
      assert.notEqual(await remoteTag(w), tag, `round ${round}: not pushed before the kill`);
      w.proxy!.clearFaults();

      serve = await start();
      await eventually(
        async () => ((await remoteTag(w!)) === tag ? true : undefined),
        `round ${round}: ${tag} on the remote after the restart`,
        60_000,
      );
      // The push is on the remote before the pass logs it: the daemon is done with this round.
      await serve.waitForLog((r) => r.msg === 'pass' && r.result === 'pushed', `round ${round}: the pass`);
    }
  });
});
