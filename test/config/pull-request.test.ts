/**
 * `spec.git.push.pullRequest` and a templated `spec.git.push.branch` are checked at the boundary
 * (issue 25): `pawl validate` exits 2 naming the file, the line and what to write instead.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GIT, POLICY, REPO, automationWith, lineOf, validateText as validate } from './fixtures.js';

const automation = (push: string, apiVersion?: string): string => automationWith({ push }, apiVersion);

const secret = (key: string): string =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: forge-token\n  namespace: apps\nstringData:\n  ${key}: x\n`;

const PR = `      branch: 'pawl/{{ .AutomationObject.Name }}'
      pullRequest:
        secretRef: { name: forge-token }
        title: 'Update {{ range .Changed.Changes }}{{ .NewValue }}{{ end }}'
        labels: [images]`;

describe('pawl validate: pull requests', { concurrency: 4 }, () => {
  test('a pull request with a templated branch under pawl’s version of the kind is valid', async () => {
    const { code, stdout } = await validate(
      [REPO, POLICY, GIT, automation(PR), secret('token')].join('---\n'),
    );
    assert.equal(code, 0, stdout);
  });

  test('reviewers, assignees, draft and auto-merge are valid', async () => {
    const push = `${PR}\n        draft: true\n        reviewers: [rita, ops.bot]\n        assignees: [ash]\n        autoMerge: { method: squash }`;
    const { code, stdout } = await validate(
      [REPO, POLICY, GIT, automation(push), secret('token')].join('---\n'),
    );
    assert.equal(code, 0, stdout);
  });

  const cases: { name: string; push: string; at: string; message: RegExp; apiVersion?: string }[] = [
    {
      name: 'a reviewer written as a mention',
      push: `${PR}\n        reviewers: ['@rita']`,
      at: "reviewers: ['@rita']",
      message: /reviewers.*is not a user name on a forge, e\.g\. "alice" \(no "@"\)/,
    },
    {
      name: 'an auto-merge method no forge has',
      push: `${PR}\n        autoMerge: { method: fast-forward }`,
      at: 'autoMerge:',
      message: /"fast-forward" is not one of merge, squash, rebase/,
    },
    {
      name: 'under Flux’s version of the kind',
      push: PR,
      apiVersion: 'image.toolkit.fluxcd.io/v1beta2',
      at: 'pullRequest:',
      message: /is pawl's field, not Flux's: set apiVersion: image\.pawl\.dev\/v1alpha1/,
    },
    {
      name: 'without a branch to propose',
      push: `      pullRequest:\n        secretRef: { name: forge-token }`,
      at: '    push:',
      message: /branch.*is needed with pullRequest/,
    },
    {
      name: 'an unknown provider',
      push: `${PR}\n        provider: bitbucket`,
      at: 'provider: bitbucket',
      message: /"bitbucket" is not one of github, gitlab, gitea/,
    },
    {
      name: 'a title that is no Go template',
      push: PR.replace("title: 'Update {{ range", "title: 'Update {{ rnge"),
      at: 'title:',
      message: /title.*not a valid Go template|title.*cannot be rendered/,
    },
    {
      name: 'a branch template that cannot be rendered',
      push: PR.replace('{{ .AutomationObject.Name }}', '{{ .Changed.Nope }}'),
      at: "branch: 'pawl/",
      message: /branch.*cannot be rendered/,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const text = [REPO, POLICY, GIT, automation(c.push, c.apiVersion)].join('---\n');
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

  test('the token’s Secret must be there, with the key token', async () => {
    const missing = await validate([REPO, POLICY, GIT, automation(PR)].join('---\n'));
    assert.match(missing.stdout, /forge-token/);
    const noKey = await validate([REPO, POLICY, GIT, automation(PR), secret('password')].join('---\n'));
    assert.match(
      noKey.stdout,
      /Secret apps\/forge-token has no "token" key; pullRequest needs the forge's API token there/,
    );
    const good = await validate([REPO, POLICY, GIT, automation(PR), secret('token')].join('---\n'));
    assert.doesNotMatch(good.stdout, /forge-token/);
  });

  test('an API URL holding credentials is refused, and the credentials are not repeated', async () => {
    const text = [
      REPO,
      POLICY,
      GIT,
      automation(`${PR}\n        apiURL: https://bot:s3cr3t-pw@gitea.example.com/api/v1`),
    ].join('---\n');
    const { code, stdout } = await validate(text);
    assert.equal(code, 2, stdout);
    assert.match(stdout, /apiURL.*must not hold credentials/);
    assert.ok(!stdout.includes('s3cr3t-pw'), stdout);
  });
});
