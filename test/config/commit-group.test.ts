/**
 * `spec.git.commit.group` and `spec.git.commit.batch` are checked at the boundary (issue 25):
 * pawl's fields, under pawl's version of the kind only; `pawl validate` exits 2 naming the file,
 * the line and what to write instead.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GIT, POLICY, REPO, automationWith, lineOf, validateText as validate } from './fixtures.js';

const automation = (commit: string, apiVersion?: string): string => automationWith({ commit }, apiVersion);

describe('pawl validate: commit grouping and batching', { concurrency: 4 }, () => {
  test('group: policy and batch: 10m under pawl’s version of the kind are valid', async () => {
    const text = [REPO, POLICY, GIT, automation('      group: policy\n      batch: 10m')].join('---\n');
    const { code, stdout } = await validate(text);
    assert.equal(code, 0, stdout);
  });

  const cases: { name: string; commit: string; at: string; message: RegExp; apiVersion?: string }[] = [
    {
      name: 'group under Flux’s version of the kind',
      commit: '      group: policy',
      apiVersion: 'image.toolkit.fluxcd.io/v1beta2',
      at: 'group: policy',
      message: /group.*is pawl's field, not Flux's: set apiVersion: image\.pawl\.dev\/v1alpha1/,
    },
    {
      name: 'batch under Flux’s version of the kind',
      commit: '      batch: 10m',
      apiVersion: 'image.toolkit.fluxcd.io/v1beta2',
      at: 'batch: 10m',
      message: /batch.*is pawl's field, not Flux's/,
    },
    {
      name: 'an unknown group',
      commit: '      group: commit',
      at: 'group: commit',
      message: /"commit" is not one of pass, policy/,
    },
    {
      name: 'a batch that is no Go duration',
      commit: '      batch: 10 minutes',
      at: 'batch: 10 minutes',
      message: /batch/,
    },
    {
      name: 'a batch of nothing',
      commit: '      batch: 0s',
      at: 'batch: 0s',
      message: /batch.*must be longer than 0/,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const text = [REPO, POLICY, GIT, automation(c.commit, c.apiVersion)].join('---\n');
      const { code, stdout, file } = await validate(text);
      assert.equal(code, 2, stdout);
      const hit = stdout.split('\n').find((l) => c.message.test(l));
      assert.ok(hit, `no line matching ${String(c.message)} in:\n${stdout}`);
      assert.ok(
        hit.startsWith(`${file}:${lineOf(text, c.at)}: `),
        `expected line ${lineOf(text, c.at)} in ${hit}`,
      );
    });
  }
});
