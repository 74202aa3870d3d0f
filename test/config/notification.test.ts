import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { VALID, configDir, lineOf } from './fixtures.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function pawl(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, PAWL_LOG_LEVEL: 'silent' } },
      (err, stdout) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout });
      },
    );
  });
}

const PROVIDER = `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: hooks
  namespace: apps
spec:
  type: generic-hmac
  address: https://hooks.example.com/pawl
  secretRef:
    name: hook-token
  timeout: 10s
`;

const SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: hook-token
  namespace: apps
stringData:
  token: s3cret
  headers: |
    X-Team: images
`;

const ALERT = `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: images
  namespace: apps
spec:
  providerRef:
    name: hooks
  eventSeverity: error
  eventSources:
    - kind: ImagePolicy
      name: '*'
    - kind: ImageUpdateAutomation
      name: fleet
  exclusionList:
    - '^Stale'
  eventMetadata:
    cluster: prod
`;

const sub = (text: string, from: string, to: string): string => {
  assert.ok(text.includes(from), `fixture contains ${from}`);
  return text.replace(from, to);
};

interface Case {
  name: string;
  text: string;
  at: string;
  message: RegExp;
  severity?: 'error' | 'warning';
}

const CASES: Case[] = [
  {
    name: 'unknown provider type',
    text: sub(PROVIDER, 'type: generic-hmac', 'type: pigeon'),
    at: 'type: pigeon',
    message: /Provider apps\/hooks: spec\.type: "pigeon" is not one of generic, generic-hmac, slack/,
  },
  {
    name: 'Flux provider type pawl does not send to',
    text: sub(PROVIDER, 'type: generic-hmac', 'type: pagerduty'),
    at: 'type: pagerduty',
    message: /provider type "pagerduty" is not supported by pawl yet/,
  },
  {
    name: 'address that is not a URL',
    text: sub(PROVIDER, 'https://hooks.example.com/pawl', 'hooks.example.com'),
    at: 'address: hooks.example.com',
    message: /spec\.address is not an http\(s\) URL/,
  },
  {
    name: 'timeout in hours (Flux allows ms, s, m)',
    text: sub(PROVIDER, 'timeout: 10s', 'timeout: 1h'),
    at: 'timeout: 1h',
    message: /spec\.timeout: "1h" is not a valid timeout/,
  },
  {
    name: 'no address and no secretRef',
    text: sub(
      sub(PROVIDER, '  address: https://hooks.example.com/pawl\n', ''),
      '  secretRef:\n    name: hook-token\n',
      '',
    ),
    at: 'spec:',
    message: /spec\.address is required unless secretRef names a Secret/,
  },
  {
    name: 'generic-hmac without a secretRef',
    text: sub(PROVIDER, '  secretRef:\n    name: hook-token\n', ''),
    at: 'type: generic-hmac',
    message: /spec\.type: generic-hmac needs a secretRef to a Secret with a "token" key/,
  },
  {
    name: 'generic-hmac Secret without a token',
    text: [
      sub(SECRET, 'name: hook-token', 'name: no-token').replace('  token: s3cret\n', ''),
      sub(PROVIDER, 'name: hook-token', 'name: no-token'),
    ].join('---\n'),
    at: '    name: no-token',
    message: /Secret apps\/no-token has no "token" key; a generic-hmac Provider signs with it/,
  },
  {
    name: 'alert names a missing Provider',
    text: sub(ALERT, 'name: hooks', 'name: hook'),
    at: '    name: hook',
    message: /Alert apps\/images: Provider apps\/hook not found\. Did you mean apps\/hooks\?/,
  },
  {
    name: 'bad eventSeverity',
    text: sub(ALERT, 'eventSeverity: error', 'eventSeverity: warning'),
    at: 'eventSeverity: warning',
    message: /spec\.eventSeverity: "warning" is not one of info, error/,
  },
  {
    name: 'unknown event source kind',
    text: sub(ALERT, 'kind: ImagePolicy', 'kind: Deployment'),
    at: 'kind: Deployment',
    message: /spec\.eventSources\[0\]\.kind: "Deployment" is not one of Bucket, GitRepository/,
  },
  {
    name: 'exclusionList entry that is not RE2',
    text: sub(ALERT, "'^Stale'", "'(?=x)'"),
    at: "- '(?=x)'",
    message: /spec\.exclusionList\[0\]: not a valid RE2 regular expression/,
  },
  {
    name: 'a Flux kind pawl emits nothing about',
    text: sub(ALERT, 'kind: ImagePolicy', 'kind: Kustomization'),
    at: 'kind: Kustomization',
    message:
      /warning: Alert apps\/images: pawl sends no events about Kustomization; this source matches nothing/,
    severity: 'warning',
  },
  {
    name: 'a named source that does not exist',
    text: sub(ALERT, 'name: fleet\n', 'name: nope\n'),
    at: '      name: nope',
    message: /warning: Alert apps\/images: ImageUpdateAutomation apps\/nope not found/,
    severity: 'warning',
  },
];

describe('pawl validate: Provider and Alert', { concurrency: 4 }, () => {
  test('valid Provider, Secret and Alert load with their defaults', async () => {
    const { dir, cleanup } = await configDir({
      'f.yaml': [VALID, PROVIDER, SECRET, ALERT].join('---\n'),
    });
    try {
      const { config, problems } = await loadConfig([dir]);
      assert.deepEqual(
        problems.filter((p) => p.severity === 'error'),
        [],
      );
      const p = config.providers.get('apps/hooks')!;
      assert.equal(p.spec.type, 'generic-hmac');
      assert.equal(p.spec.timeout, 10_000);
      assert.equal(p.spec.secretRef, 'hook-token');
      const a = config.alerts.get('apps/images')!;
      assert.equal(a.spec.providerRef, 'hooks');
      assert.equal(a.spec.eventSeverity, 'error');
      assert.deepEqual(a.spec.eventMetadata, { cluster: 'prod' });
      assert.deepEqual(a.spec.eventSources[0], { kind: 'ImagePolicy', name: '*' });
    } finally {
      await cleanup();
    }
  });

  test('v1beta2 objects are read; another apiVersion of the group is an error', async () => {
    const v2 = sub(PROVIDER, 'v1beta3', 'v1beta2');
    const v1 = sub(ALERT, 'v1beta3', 'v1');
    const text = [VALID, v2, SECRET, v1].join('---\n');
    const { dir, cleanup } = await configDir({ 'f.yaml': text });
    try {
      const { config, problems } = await loadConfig([dir]);
      assert.equal(config.providers.size, 1);
      assert.equal(config.alerts.size, 0);
      const errors = problems.filter((p) => p.severity === 'error');
      assert.equal(errors.length, 1);
      assert.match(
        errors[0]!.message,
        /apiVersion notification\.toolkit\.fluxcd\.io\/v1 is not supported for Alert/,
      );
    } finally {
      await cleanup();
    }
  });

  for (const c of CASES) {
    test(`${c.name}: reported at file:line`, async () => {
      const text = [VALID, SECRET, c.text.includes('kind: Alert') ? PROVIDER : ALERT, c.text].join('---\n');
      const { dir, cleanup } = await configDir({ 'f.yaml': text });
      try {
        const { code, stdout } = await pawl(['validate', '-c', dir]);
        const severity = c.severity ?? 'error';
        assert.equal(code, severity === 'error' ? 2 : 0, stdout);
        // The line of `at` inside the case's own document (the last one).
        const offset = text.length - c.text.length;
        const line = text.slice(0, offset).split('\n').length - 1 + lineOf(c.text, c.at);
        const hit = stdout.split('\n').find((l) => c.message.test(l));
        assert.ok(hit, `expected ${String(c.message)} in:\n${stdout}`);
        assert.ok(hit.startsWith(`${join(dir, 'f.yaml')}:${line}: `), `expected f.yaml:${line} in ${hit}`);
      } finally {
        await cleanup();
      }
    });
  }
});
