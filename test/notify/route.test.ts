import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { route, type AlertEvent } from '../../src/notify/index.js';
import { configWith } from './fixtures.js';

const reporting = { reportingController: 'pawl' };

const event = (over: Partial<AlertEvent> = {}): AlertEvent => ({
  object: { kind: 'ImagePolicy', namespace: 'apps', name: 'app' },
  severity: 'info',
  reason: 'PinCreated',
  message: 'Pinned (apps/d.yaml:5): kept.',
  metadata: {},
  at: new Date('2026-11-30T09:00:00Z'),
  ...over,
});

async function config(alertExtra: string) {
  return configWith([{ type: 'generic', address: 'http://127.0.0.1:9/hook' }], alertExtra);
}

describe('route: Flux’s Alert rules', () => {
  test('eventSeverity error passes errors only; info passes both', async () => {
    const c = await config('  eventSeverity: error\n');
    assert.equal(route(c, event(), reporting).length, 0);
    assert.equal(route(c, event({ severity: 'error' }), reporting).length, 1);
    const all = await config('');
    assert.equal(route(all, event(), reporting).length, 1);
    assert.equal(route(all, event({ severity: 'error' }), reporting).length, 1, 'info passes errors too');
  });

  test('inclusionList and exclusionList are RE2 patterns over the message', async () => {
    const inc = await config("  inclusionList: ['^Pinned \\(apps/']\n");
    assert.equal(route(inc, event(), reporting).length, 1);
    assert.equal(route(inc, event({ message: 'Downgrade blocked (apps/x.yaml:1): …' }), reporting).length, 0);
    const exc = await config("  exclusionList: ['d\\.yaml']\n");
    assert.equal(route(exc, event(), reporting).length, 0);
    assert.equal(route(exc, event({ message: 'Pinned (apps/e.yaml:5): kept.' }), reporting).length, 1);
  });

  test('sources match on namespace, kind, name and matchLabels against the object’s labels', async () => {
    const c = await config('');
    const alert = c.alerts.get('apps/to-hooks')!;
    alert.spec.eventSources = [{ kind: 'ImagePolicy', name: 'app', matchLabels: { team: 'web' } }];
    assert.equal(route(c, event(), reporting).length, 0, 'the policy has no team label');
    c.imagePolicies.get('apps/app')!.metadata.labels = { team: 'web' };
    assert.equal(route(c, event(), reporting).length, 1);
    assert.equal(
      route(c, event({ object: { kind: 'ImagePolicy', namespace: 'apps', name: 'other' } }), reporting)
        .length,
      0,
    );
    assert.equal(
      route(c, event({ object: { kind: 'ImagePolicy', namespace: 'prod', name: 'app' } }), reporting).length,
      0,
    );
    alert.spec.eventSources = [{ kind: 'ImageRepository', name: '*' }];
    assert.equal(route(c, event(), reporting).length, 0, 'another kind');
    alert.spec.eventSources = [{ kind: 'ImagePolicy', name: '*', namespace: 'prod' }];
    assert.equal(
      route(c, event({ object: { kind: 'ImagePolicy', namespace: 'prod', name: 'x' } }), reporting).length,
      1,
    );
  });

  test('a suspended Alert or Provider sends nothing', async () => {
    const c = await config('  suspend: true\n');
    assert.equal(route(c, event(), reporting).length, 0);
    const p = await config('');
    p.providers.get('apps/hooks')!.spec.suspend = true;
    assert.equal(route(p, event(), reporting).length, 0);
  });

  test('the object’s event.toolkit.fluxcd.io annotations become metadata, prefix removed', async () => {
    const c = await config('');
    c.imagePolicies.get('apps/app')!.metadata.annotations = {
      'event.toolkit.fluxcd.io/team': 'web',
      'other.example.com/x': 'no',
    };
    const [d] = route(c, event({ metadata: { file: 'apps/d.yaml:5' } }), reporting);
    assert.deepEqual(d!.event.metadata, { cluster: 'prod', file: 'apps/d.yaml:5', team: 'web' });
    assert.equal(d!.provider, 'apps/hooks');
    assert.equal(d!.alert, 'apps/to-hooks');
  });

  test('later wins: annotations, then the Alert’s eventMetadata and summary, then the event’s own metadata', async () => {
    const c = await config('');
    c.imagePolicies.get('apps/app')!.metadata.annotations = {
      'event.toolkit.fluxcd.io/cluster': 'from-annotation',
      'event.toolkit.fluxcd.io/team': 'from-annotation',
    };
    const alert = c.alerts.get('apps/to-hooks')!;
    alert.spec.eventMetadata = { team: 'from-alert', file: 'from-alert', summary: 'from-alert' };
    alert.spec.summary = 'from-summary';
    const [d] = route(c, event({ metadata: { file: 'apps/d.yaml:5', summary: 'from-event' } }), reporting);
    assert.deepEqual(d!.event.metadata, {
      cluster: 'from-annotation',
      file: 'apps/d.yaml:5',
      summary: 'from-event',
      team: 'from-alert',
    });
  });
});
