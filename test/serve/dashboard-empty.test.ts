/**
 * The dashboard's "Needs attention" tells the truth (issue 23, item 10), in headless Chromium
 * against a real `pawl serve`: an empty configuration says there is nothing configured and where
 * pawl looked (never the green "Nothing needs a person"); once the configuration has an invalid
 * object, its problem comes first, with file:line.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildWeb } from '../../scripts/build-web.js';
import { startServe, type ServeProcess } from '../helpers/serve.js';

const CHROMIUM = '/usr/bin/chromium';

const BAD_POLICY = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: app
  namespace: flux-system
spec:
  image: 127.0.0.1:9/org/app
  interval: 1h
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: app
  namespace: flux-system
spec:
  imageRepositoryRef:
    name: app
  policy:
    semver:
      range: "not a range"
`;

describe('the dashboard’s attention list on an empty and on a broken configuration', () => {
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let configDir: string;
  let base: string | undefined;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/install-deps.sh`);
    base = await mkdtemp(join(tmpdir(), 'pawl-empty-'));
    const webDir = await buildWeb(join(base, 'web'));
    configDir = join(base, 'config');
    await mkdir(configDir);
    serve = await startServe({
      configDir,
      stateDir: join(base, 'state'),
      args: ['--no-watch'],
      env: { PAWL_WEB_DIR: webDir },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });

  after(async () => {
    await browser?.close();
    await serve?.stop();
    if (base) await rm(base, { recursive: true, force: true });
  });

  test('nothing configured: says so and names where pawl looked, not in green', async () => {
    await page.goto(`http://${serve.admin}/`);
    const calm = page.locator('[data-calm]');
    await calm.waitFor();
    assert.equal(await calm.getAttribute('data-calm'), 'nothing-configured');
    const text = await calm.innerText();
    assert.match(
      text,
      /^Nothing is configured: pawl found no ImageRepository, ImagePolicy or ImageUpdateAutomation in /,
    );
    assert.ok(text.includes(configDir), text);
    assert.doesNotMatch(text, /Nothing needs a person/);
    assert.equal(await page.locator('.ok').count(), 0, 'no green all-clear');
  });

  test('an invalid object: its problem is the first item, with file:line', async () => {
    await writeFile(join(configDir, 'app.yaml'), BAD_POLICY);
    const seen = serve.records().length;
    serve.child.kill('SIGHUP');
    await serve.waitForLog(
      (r) =>
        serve.records().indexOf(r) >= seen &&
        (r.msg === 'configuration applied' || r.msg.startsWith('configuration refused')),
      'the reload',
    );
    await page.reload();
    const first = page.locator('[data-attention]').first();
    await first.waitFor();
    assert.equal(await first.getAttribute('data-attention'), 'error');
    const title = await first.locator('.title').innerText();
    assert.match(title, /^Configuration(?: change refused)?: .*app\.yaml:\d+$/);
    assert.match(await first.locator('.why').innerText(), /ImagePolicy flux-system\/app/);
    assert.equal(await page.locator('[data-calm]').count(), 0);
  });
});
