/**
 * Where the dashboard comes from (issue 23, item 11): a daemon run from a checkout's sources
 * bundles web/ itself, and a build finds dist/web beside its bundle; web/'s own index.html (the
 * sources, without the app.js it loads) is never served as the built page. Each way, headless
 * Chromium loads the overview with no request failing, and the daemon logs the page's URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { buildCli } from '../../scripts/build.js';
import { buildWeb } from '../../scripts/build-web.js';
import { dashboardUrl, locateWeb } from '../../src/serve/index.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';
import { imageObjects, ROOT } from '../helpers/world.js';

const CHROMIUM = '/usr/bin/chromium';

/** What Chromium saw: the overview rendered, and every request that failed or was answered ≥ 400. */
async function load(browser: Browser, base: string): Promise<{ repository: string; failed: string[] }> {
  const page = await browser.newPage();
  const failed: string[] = [];
  page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.url()} ${r.status()}`);
  });
  try {
    await page.goto(`${base}/`);
    const row = page.locator('tr[data-repository="flux-system/app"]');
    await row.waitFor();
    assert.equal(await page.locator('main').getAttribute('data-view'), 'overview');
    return { repository: await row.innerText(), failed };
  } finally {
    await page.close();
  }
}

describe('the dashboard from a checkout and from a build', () => {
  let dir: string;
  let browser: Browser;
  const out = join(ROOT, 'bench', 'out', `dashboard-build-${process.pid}`);

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/install-deps.sh`);
    dir = await mkdtemp(join(tmpdir(), 'pawl-checkout-'));
    await writeFile(
      join(dir, 'app.yaml'),
      imageObjects('app', '127.0.0.1:9/team/app', 'semver:\n  range: ">=1.0.0"', { interval: '1h' }),
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  });
  after(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
    await rm(out, { recursive: true, force: true });
  });

  const serveAndLoad = async (opts: { entry?: string; state: string }) => {
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe({
        configDir: join(dir, 'app.yaml'),
        stateDir: join(dir, opts.state),
        // Nothing points the daemon at a page: it finds one itself.
        env: { PAWL_WEB_DIR: '' },
        ...(opts.entry ? { entry: opts.entry } : {}),
      });
      const url = `http://${serve.admin}/`;
      const line = await serve.waitForLog((r) => r.url === url, 'the dashboard URL');
      assert.match(line.msg, new RegExp(`^dashboard at ${url.replaceAll('.', '\\.')}`));
      return { line, ...(await load(browser, `http://${serve.admin}`)) };
    } finally {
      await serve?.stop();
    }
  };

  test('run from the sources (tsx), the daemon bundles web/ and the page loads', async () => {
    const r = await serveAndLoad({ state: 'state-sources' });
    assert.equal(r.line.web, join(ROOT, 'web'));
    assert.match(r.line.msg, /bundled from .*web on the first request/);
    assert.match(r.repository, /flux-system\/app/);
    assert.deepEqual(r.failed, []);
  });

  test('run from a build, the daemon serves the dist/web beside its bundle and the page loads', async () => {
    // Inside the checkout, so that the bundle's external imports (better-sqlite3) resolve.
    await buildCli(out);
    await buildWeb(join(out, 'web'));
    const r = await serveAndLoad({ entry: join(out, 'cli', 'main.js'), state: 'state-built' });
    assert.equal(r.line.web, join(out, 'web'));
    assert.match(r.repository, /flux-system\/app/);
    assert.deepEqual(r.failed, []);
  });
});

describe('locateWeb', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'pawl-locate-'));
    await mkdir(join(root, 'web'), { recursive: true });
    // The sources hold an index.html too: the very file that made a checkout serve 404s.
    await writeFile(join(root, 'web', 'index.html'), '<!doctype html>');
    await writeFile(join(root, 'web', 'app.ts'), '');
  });
  after(() => rm(root, { recursive: true, force: true }));
  const url = (...p: string[]) => pathToFileURL(join(root, ...p)).href;

  test('the sources are bundled when this code runs as TypeScript', () => {
    assert.deepEqual(locateWeb({}, url('src', 'serve', 'dashboard', 'routes.ts')), {
      kind: 'sources',
      dir: join(root, 'web'),
    });
  });

  test('a bundle never takes web/ (no app.js) for the built page; it finds dist/web, or says it is missing', async () => {
    const chunk = url('dist', 'cli', 'chunks', 'serve-X.js');
    const missing = locateWeb({}, chunk);
    assert.equal(missing.kind, 'missing');
    assert.ok(missing.kind === 'missing' && missing.looked.includes(join(root, 'dist', 'web')));
    await mkdir(join(root, 'dist', 'web'), { recursive: true });
    await writeFile(join(root, 'dist', 'web', 'index.html'), '<!doctype html>');
    await writeFile(join(root, 'dist', 'web', 'app.js'), '');
    assert.deepEqual(locateWeb({}, chunk), { kind: 'built', dir: join(root, 'dist', 'web') });
    assert.deepEqual(locateWeb({ PAWL_WEB_DIR: join(root, 'web') }, chunk).kind, 'missing');
  });

  test('the URL of a wildcard listener is the loopback one', () => {
    assert.equal(dashboardUrl('127.0.0.1:9293'), 'http://127.0.0.1:9293/');
    assert.equal(dashboardUrl('0.0.0.0:9293'), 'http://localhost:9293/');
    assert.equal(dashboardUrl('[::]:9293'), 'http://localhost:9293/');
    assert.equal(dashboardUrl('[::1]:9293'), 'http://[::1]:9293/');
  });
});
