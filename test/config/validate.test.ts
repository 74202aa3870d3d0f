import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { AUTOMATION, GIT, POLICY, REPO, VALID, configDir, lineOf } from './fixtures.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function pawl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args],
      { cwd: ROOT, env: { ...process.env, PAWL_LOG_LEVEL: 'silent' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function validate(files: Record<string, string>, extra: string[] = []) {
  const { dir, cleanup } = await configDir(files);
  try {
    return { dir, ...(await pawl(['validate', '-c', dir, ...extra])) };
  } finally {
    await cleanup();
  }
}

interface Case {
  name: string;
  text: string;
  /** Text on the line the problem must point at. */
  at: string;
  message: RegExp;
  /** Which exact occurrence of `at` as a whole line (default: first line containing it). */
  nth?: number;
}

const sub = (text: string, from: string, to: string): string => {
  assert.ok(text.includes(from), `fixture contains ${from}`);
  return text.replace(from, to);
};

const CASES: Case[] = [
  {
    name: 'invalid YAML',
    text: `${REPO}---\nkind: ImagePolicy\nspec:\n  image: a: b\n  interval: 5m\n`,
    at: 'image: a: b',
    message: /not valid YAML: Nested mappings/,
  },
  {
    name: 'policy names a missing ImageRepository',
    text: [REPO, sub(POLICY, 'name: app\n  policy', 'name: ap\n  policy')].join('---\n'),
    at: '    name: ap',
    nth: 1,
    message: /ImagePolicy apps\/app: ImageRepository apps\/ap not found\. Did you mean apps\/app\?/,
  },
  {
    name: 'automation names a missing GitRepository',
    text: [REPO, POLICY, AUTOMATION].join('---\n'),
    at: '    name: fleet',
    message: /ImageUpdateAutomation apps\/fleet: GitRepository apps\/fleet not found/,
  },
  {
    name: 'secretRef names a missing Secret',
    text: [sub(REPO, 'interval: 5m', 'interval: 5m\n  secretRef:\n    name: regcred'), POLICY].join('---\n'),
    at: 'name: regcred',
    message: /Secret apps\/regcred not found/,
  },
  {
    name: 'duplicate names (an identical copy is the same object; a different one is a conflict)',
    text: [REPO, POLICY, REPO, sub(REPO, 'interval: 5m', 'interval: 10m')].join('---\n'),
    at: '  name: app',
    nth: 4,
    message: /ImageRepository apps\/app is defined twice, differently \(also at .*f\.yaml:1\)/,
  },
  {
    name: 'image with a scheme',
    text: [sub(REPO, 'image: ghcr.io/org/app', 'image: https://ghcr.io/org/app'), POLICY].join('---\n'),
    at: 'image:',
    message: /has a scheme \(https:\/\/\); write the repository without it, e\.g\. "ghcr\.io\/org\/app"/,
  },
  {
    name: 'image with a tag',
    text: [sub(REPO, 'image: ghcr.io/org/app', 'image: ghcr.io/org/app:1.0'), POLICY].join('---\n'),
    at: 'image:',
    message: /has a tag/,
  },
  {
    name: 'image with a digest',
    text: [
      sub(REPO, 'image: ghcr.io/org/app', `image: ghcr.io/org/app@sha256:${'a'.repeat(64)}`),
      POLICY,
    ].join('---\n'),
    at: 'image:',
    message: /has a digest/,
  },
  {
    name: 'image that breaks the reference grammar',
    text: [sub(REPO, 'image: ghcr.io/org/app', 'image: ghcr.io/Org/App'), POLICY].join('---\n'),
    at: 'image:',
    message: /must be lowercase/,
  },
  {
    name: 'semver range',
    text: [REPO, sub(POLICY, 'range: ">=1.0.0"', 'range: ">=1.0.0 <<2"')].join('---\n'),
    at: 'range:',
    message: /spec\.policy\.semver\.range: .* is not a valid semver range/,
  },
  {
    name: 'filterTags regular expression',
    text: [REPO, sub(POLICY, '  policy:', "  filterTags:\n    pattern: '^(?P<ts[0-9]+'\n  policy:")].join(
      '---\n',
    ),
    at: 'pattern:',
    message: /spec\.filterTags\.pattern: not a valid RE2 regular expression/,
  },
  {
    name: 'exclusionList regular expression (RE2 has no lookahead)',
    text: [sub(REPO, 'interval: 5m', "interval: 5m\n  exclusionList:\n    - '^(?!v)'"), POLICY].join('---\n'),
    at: "- '^(?!v)'",
    message: /spec\.exclusionList\[0\]: not a valid RE2 regular expression/,
  },
  {
    name: 'duration',
    text: [sub(REPO, 'interval: 5m', 'interval: 5 minutes'), POLICY].join('---\n'),
    at: 'interval:',
    message: /spec\.interval: "5 minutes" does not match Flux's interval pattern/,
  },
  {
    name: 'order enum',
    text: [REPO, sub(POLICY, 'semver:\n      range: ">=1.0.0"', 'alphabetical:\n      order: newest')].join(
      '---\n',
    ),
    at: 'order:',
    message: /spec\.policy\.alphabetical\.order: "newest" is not one of asc, desc/,
  },
  {
    name: 'provider aws with an image that is not on ECR',
    text: [sub(REPO, 'interval: 5m', 'interval: 5m\n  provider: aws'), POLICY].join('---\n'),
    at: 'provider:',
    message: /spec\.provider: provider aws needs an Amazon ECR image/,
  },
  {
    name: 'provider enum',
    text: [sub(REPO, 'interval: 5m', 'interval: 5m\n  provider: AWS'), POLICY].join('---\n'),
    at: 'provider:',
    message: /spec\.provider: "AWS" is not one of generic, aws, azure, gcp; did you mean aws\?/,
  },
  {
    name: 'guard enum',
    text: [REPO, `${POLICY}  guard:\n    downgrades: block\n`].join('---\n'),
    at: 'downgrades:',
    message: /spec\.guard\.downgrades: "block" is not one of Block, Allow; did you mean Block\?/,
  },
  {
    name: 'Receiver type',
    text: `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: hook, namespace: apps}
spec:
  type: gcr
  secretRef: {name: token}
  resources:
    - kind: ImageRepository
      name: app
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: apps}
stringData: {token: abc}
---
${REPO}`,
    at: 'type: gcr',
    message: /receiver type "gcr" is not supported by pawl \(it authenticates Google Pub\/Sub/,
  },
  ...(['c/ab', 'bc/a'] as const).map((which): Case => {
    // token + name + namespace: "tok" + "ab" + "c" and "tok" + "a" + "bc" are one string.
    const receiver = (ns: string, name: string) => `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata:
  namespace: ${ns}
  name: ${name}
spec:
  type: generic
  secretRef: {name: token}
  resources:
    - {kind: ImageRepository, name: app, namespace: apps}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: ${ns}}
stringData: {token: tok}
`;
    const [ns, name] = which.split('/') as [string, string];
    const other = which === 'c/ab' ? 'bc/a' : 'c/ab';
    return {
      name: `two Receivers with one hook path: ${which} is an error naming ${other}`,
      text: [receiver('c', 'ab'), receiver('bc', 'a'), REPO].join('---\n'),
      at: `  name: ${name}`,
      nth: 1,
      message: new RegExp(
        `Receiver ${ns}/${name}: this Receiver has the same hook path as Receiver ${other} \\(.*f\\.yaml:\\d+\\)`,
      ),
    };
  }),
  {
    name: 'Receiver wildcard without matchLabels',
    text: `apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: hook, namespace: apps}
spec:
  type: distribution
  secretRef: {name: token}
  resources:
    - kind: ImageRepository
      name: '*'
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: apps}
stringData: {token: abc}
---
${REPO}`,
    at: '- kind: ImageRepository',
    message: /spec\.resources\[0\]\.matchLabels: name "\*" needs matchLabels/,
  },
  {
    name: 'update.path outside the repository',
    text: [REPO, POLICY, GIT, sub(AUTOMATION, 'path: ./clusters/prod', 'path: ../elsewhere')].join('---\n'),
    at: 'path: ../elsewhere',
    message: /spec\.update\.path: .* contains "\.\."/,
  },
  {
    name: 'absolute update.path',
    text: [REPO, POLICY, GIT, sub(AUTOMATION, 'path: ./clusters/prod', 'path: /etc')].join('---\n'),
    at: 'path: /etc',
    message: /is absolute/,
  },
  {
    name: 'git URL scheme',
    text: [
      REPO,
      POLICY,
      sub(GIT, 'url: https://github.com/org/fleet', 'url: ftp://github.com/org/fleet'),
      AUTOMATION,
    ].join('---\n'),
    at: 'url:',
    message: /"ftp:\/\/" is not supported/,
  },
  {
    name: 'wrong type for a known field',
    text: [sub(REPO, 'interval: 5m', 'interval: 5m\n  insecure: "yes"'), POLICY].join('---\n'),
    at: 'insecure:',
    message: /spec\.insecure: expected true or false, got a string/,
  },
  {
    name: 'missing required field',
    text: [sub(REPO, '  interval: 5m\n', ''), POLICY].join('---\n'),
    at: 'spec:',
    message: /spec\.interval is required/,
  },
  {
    name: 'unsupported apiVersion of a known kind',
    text: [sub(REPO, 'image.toolkit.fluxcd.io/v1', 'image.toolkit.fluxcd.io/v1alpha1'), POLICY].join('---\n'),
    at: 'apiVersion: image.toolkit.fluxcd.io/v1alpha1',
    message: /apiVersion image\.toolkit\.fluxcd\.io\/v1alpha1 is not supported for ImageRepository/,
  },
  {
    name: 'two policy strategies',
    text: [REPO, sub(POLICY, '    semver:', '    numerical: {}\n    semver:')].join('---\n'),
    at: 'policy:',
    message: /spec\.policy has semver and numerical; a policy uses exactly one/,
  },
  {
    name: 'Secret data that is not base64',
    text: [
      sub(REPO, 'interval: 5m', 'interval: 5m\n  secretRef: {name: creds}'),
      POLICY,
      'apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: apps}\ntype: kubernetes.io/basic-auth\ndata:\n  username: not*base64\n',
    ].join('---\n'),
    at: 'username:',
    message: /data\.username is not valid base64/,
  },
  {
    name: 'messageTemplate that does not parse',
    text: [
      REPO,
      POLICY,
      GIT,
      AUTOMATION.replace('    push:', "      messageTemplate: '{{ range .Changed.Changes }}'\n    push:"),
    ].join('---\n'),
    at: 'messageTemplate:',
    message:
      /spec\.git\.commit\.messageTemplate is not a valid Go template: template: commit message:1: unexpected EOF/,
  },
  {
    name: 'selector operator',
    text: [
      REPO,
      POLICY,
      GIT,
      `${AUTOMATION}  policySelector:\n    matchExpressions:\n      - {key: app, operator: Equals, values: [x]}\n`,
    ].join('---\n'),
    at: 'operator: Equals',
    message: /"Equals" is not one of In, NotIn, Exists, DoesNotExist/,
  },
];

describe('pawl validate: each kind of error exits 2 with file:line', { concurrency: 6 }, () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const { code, stdout, dir } = await validate({ 'f.yaml': c.text });
      assert.equal(code, 2, stdout);
      const line = c.nth
        ? c.text
            .split('\n')
            .map((l, i) => (l === c.at ? i + 1 : 0))
            .filter(Boolean)[c.nth - 1]
        : lineOf(c.text, c.at);
      const hit = stdout.split('\n').find((l) => c.message.test(l));
      assert.ok(hit, `no line matching ${String(c.message)} in:\n${stdout}`);
      assert.ok(hit.startsWith(`${join(dir, 'f.yaml')}:${line}: `), `expected f.yaml:${line} in ${hit}`);
      assert.match(stdout, /^invalid: .*\d+ errors?/m);
    });
  }
});

describe('pawl validate', { concurrency: 4 }, () => {
  test('a valid configuration exits 0 and counts objects per kind', async () => {
    const { code, stdout } = await validate({ 'f.yaml': VALID });
    assert.equal(code, 0, stdout);
    assert.match(
      stdout,
      /^valid: 1 ImageRepository, 1 ImagePolicy, 1 ImageUpdateAutomation, 1 GitRepository; 0 errors, 0 warnings$/m,
    );
  });

  test('a typo in a field name is a warning naming the field and the closest known one', async () => {
    const text = [REPO, sub(POLICY, '  policy:', "  filterTag:\n    pattern: '^v'\n  policy:")].join('---\n');
    const { code, stdout, dir } = await validate({ 'f.yaml': text });
    assert.equal(code, 0, stdout);
    assert.ok(
      stdout.includes(
        `${join(dir, 'f.yaml')}:${lineOf(text, 'filterTag:')}: warning: ImagePolicy apps/app: unknown field spec.filterTag`,
      ),
      stdout,
    );
    assert.match(stdout, /did you mean filterTags\?/);
    assert.match(stdout, /0 errors, 1 warning$/m);
  });

  test('every problem is reported in one go, across files', async () => {
    const { code, stdout } = await validate({
      'a/repo.yaml': sub(REPO, 'interval: 5m', 'interval: soon'),
      'b/policy.yaml': sub(
        sub(POLICY, 'name: app\n  policy', 'name: nope\n  policy'),
        '>=1.0.0',
        'not a range',
      ),
    });
    assert.equal(code, 2);
    assert.match(stdout, /repo\.yaml:8: .*spec\.interval/);
    assert.match(stdout, /policy\.yaml:8: .*ImageRepository apps\/nope not found/);
    assert.match(stdout, /policy\.yaml:11: .*semver range/);
    assert.match(stdout, /3 errors/);
  });

  test('--json prints objects and problems', async () => {
    const text = [sub(REPO, 'interval: 5m', 'interval: 5 minutes'), POLICY].join('---\n');
    const { code, stdout, dir } = await validate({ 'f.yaml': text }, ['--json']);
    assert.equal(code, 2);
    const out = JSON.parse(stdout) as {
      objects: Record<string, number>;
      problems: Record<string, unknown>[];
      skipped: Record<string, unknown>[];
    };
    // The policy is valid but needs the invalid repository: neither would run.
    assert.equal(out.objects.ImagePolicy, 0);
    assert.equal(out.objects.ImageRepository, 0);
    assert.deepEqual(
      out.skipped.map((s) => [s.kind, s.name, s.line, s.reason, s.dependsOn]),
      [
        ['ImageRepository', 'apps/app', 1, 'invalid', null],
        ['ImagePolicy', 'apps/app', 10, 'dependency', 'ImageRepository apps/app'],
      ],
    );
    assert.deepEqual(out.problems, [
      {
        file: join(dir, 'f.yaml'),
        line: 8,
        object: 'ImageRepository apps/app',
        severity: 'error',
        message: `spec.interval: "5 minutes" does not match Flux's interval pattern ^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$ (units ms, s, m, h); e.g. 30s, 5m, 1h30m`,
      },
    ]);
  });

  test('without -c it is a usage error telling the user to pass -c PATH', async () => {
    const { code, stderr } = await pawl(['validate']);
    assert.equal(code, 2);
    assert.match(stderr, /pass -c PATH/);
  });

  test("a Secret's values never appear in any message", async () => {
    const value = 'SUPERSECRETVALUE';
    const b64 = Buffer.from(value).toString('base64');
    const text = [
      REPO,
      POLICY,
      `apiVersion: v1\nkind: Secret\nmetadata: {name: a, namespace: apps}\ndata:\n  bad: ${value}!\n  good: ${b64}\nstringData:\n  number: 12345678\n`,
      `apiVersion: v1\nkind: Secret\nmetadata: {name: b, namespace: apps}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '${value}'\n`,
      `apiVersion: v1\nkind: Secret\nmetadata: {name: c, namespace: apps}\nstringData:\n  password: ${value}: nested: ${value}\n`,
    ].join('---\n');
    for (const extra of [[], ['--json']]) {
      const { code, stdout, stderr } = await validate({ 'f.yaml': text }, extra);
      assert.equal(code, 2, stdout);
      assert.ok(!stdout.includes(value) && !stdout.includes(b64) && !stdout.includes('12345678'), stdout);
      assert.ok(!stderr.includes(value) && !stderr.includes(b64), stderr);
      assert.match(stdout, /data\.bad is not valid base64/);
      assert.match(stdout, /stringData\.number/);
      assert.match(stdout, /not a Docker config/);
    }
  });
});
