/**
 * What the Dockerfile copies exists and passes .dockerignore (a check that needs no build: the
 * podman build itself is opt-in, test/ship/dockerfile.check.ts). It once named a
 * tsconfig.build.json that the esbuild bundle had replaced, and built no dashboard.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/world.js';

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const admitted = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .filter((l) => l.startsWith('!'))
  .map((l) => l.slice(1).replace(/\/$/, ''));

/** The sources of each `COPY` from the build context (not `--from` another stage). */
function copiedFromContext(): string[] {
  const out: string[] = [];
  for (const line of dockerfile.split('\n')) {
    const m = /^COPY\s+(?!--from)(.*)$/.exec(line.trim());
    if (!m) continue;
    const words = m[1]!.split(/\s+/).filter((w) => !w.startsWith('--'));
    out.push(...words.slice(0, -1));
  }
  return out;
}

test('every file the Dockerfile copies from the context exists and is admitted by .dockerignore', () => {
  const sources = copiedFromContext();
  assert.ok(sources.includes('web') && sources.includes('src'), String(sources));
  for (const s of sources) {
    const path = s.replace(/\/$/, '');
    assert.ok(existsSync(join(ROOT, path)), `the Dockerfile copies ${path}, which does not exist`);
    assert.ok(
      admitted.some((a) => path === a || path.startsWith(`${a}/`)),
      `.dockerignore does not admit ${path}`,
    );
  }
});

test('the image is built as npm run build builds: the CLI bundle and the dashboard; PAWL_CONFIG is set', () => {
  assert.match(dockerfile, /node --import tsx scripts\/build\.ts/);
  assert.match(dockerfile, /node --import tsx scripts\/build-web\.ts/);
  assert.match(dockerfile, /^ENV .*PAWL_CONFIG=\/etc\/pawl\/config/m);
});
