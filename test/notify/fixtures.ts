/** Configurations and pass reports for the alert tests. */
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';
import type { AutomationReport, KeptReport, RunReport } from '../../src/run/report.js';
import type { Reason } from '../../src/guard/index.js';
import { VALID, configDir } from '../config/fixtures.js';

export const TOKEN = 'hmac-token-for-tests';

export interface ProviderSpec {
  name?: string;
  type?: string;
  address: string;
  extra?: string;
  /** Secret stringData lines (indented by the caller's YAML). */
  secret?: Record<string, string>;
}

function providerYaml(p: ProviderSpec): string {
  const name = p.name ?? 'hooks';
  const secret = p.secret
    ? `---
apiVersion: v1
kind: Secret
metadata:
  name: ${name}-secret
  namespace: apps
stringData:
${Object.entries(p.secret)
  .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
  .join('\n')}
`
    : '';
  return `---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata:
  name: ${name}
  namespace: apps
spec:
  type: ${p.type ?? 'generic-hmac'}
  address: ${p.address}
${p.secret ? `  secretRef:\n    name: ${name}-secret\n` : ''}${p.extra ?? ''}${secret}`;
}

function alertYaml(name: string, provider: string, extra = ''): string {
  return `---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata:
  name: ${name}
  namespace: apps
spec:
  providerRef:
    name: ${provider}
  eventSources:
    - kind: ImageRepository
      name: '*'
    - kind: ImagePolicy
      name: '*'
    - kind: ImageUpdateAutomation
      name: '*'
  eventMetadata:
    cluster: prod
${extra}`;
}

/** The configuration of `configWith` as YAML. */
export function configText(providers: ProviderSpec[], alertExtra = ''): string {
  return (
    VALID +
    providers.map(providerYaml).join('') +
    providers.map((p) => alertYaml(`to-${p.name ?? 'hooks'}`, p.name ?? 'hooks', alertExtra)).join('')
  );
}

/**
 * The config fixture (ImageRepository, ImagePolicy apps/app, automation apps/fleet) plus one
 * Alert per Provider matching every object, loaded by the real loader.
 */
export async function configWith(providers: ProviderSpec[], alertExtra = ''): Promise<Config> {
  const { dir, cleanup } = await configDir({ 'f.yaml': configText(providers, alertExtra) });
  try {
    const { config, problems } = await loadConfig([dir]);
    const errors = problems.filter((p) => p.severity === 'error');
    assert.deepEqual(errors, [], 'the test configuration is valid');
    return config;
  } finally {
    await cleanup();
  }
}

export function kept(
  file: string,
  line: number,
  reason: Reason,
  current: string,
  candidate: string | null,
  detail: string,
): KeptReport {
  return { file, line, setter: 'apps:app', policy: 'apps/app', current, candidate, reason, detail };
}

export function automation(over: Partial<AutomationReport>): AutomationReport {
  return {
    name: 'apps/fleet',
    result: 'up-to-date',
    commit: null,
    branch: 'main',
    changes: [],
    kept: [],
    error: null,
    ...over,
  };
}

export function report(automations: AutomationReport[], policyError: string | null = null): RunReport {
  return {
    repositories: [{ name: 'apps/app', tags: 10, scanned: true, anomalies: [], error: null }],
    policies: [{ name: 'apps/app', candidate: '1.1.0', highWater: '1.1.0', error: policyError }],
    automations,
  };
}

export const COMMIT = '0123456789abcdef0123456789abcdef01234567';
export const PIN_COMMIT = 'fedcba9876543210fedcba9876543210fedcba98';

export const BLOCKED = kept(
  'apps/b.yaml',
  9,
  'downgrade-blocked',
  '2.0.0',
  '1.1.0',
  '2.0.0 is newer than the candidate 1.1.0 by the policy’s order; kept.',
);
export const MISSING = kept(
  'apps/c.yaml',
  3,
  'candidate-missing',
  '1.0.0',
  '1.1.0',
  'candidate 1.1.0 does not exist in the registry now (HEAD 404); kept 1.0.0.',
);
export const PINNED = kept(
  'apps/d.yaml',
  5,
  'pinned',
  '1.0.0',
  '1.1.0',
  `1.0.0 was pinned by Ada in commit ${PIN_COMMIT.slice(0, 12)}; candidate 1.1.0 is not a release first seen after that, so 1.0.0 is kept.`,
);
