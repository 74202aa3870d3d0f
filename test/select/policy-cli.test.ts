import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cli = resolve(here, 'helpers', 'policy-cli.ts');
let dir = '';

function pawl(args: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', cli, 'policy', 'eval', ...args], {
    input,
    encoding: 'utf8',
    cwd: resolve(here, '..', '..'),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('pawl policy eval', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'pawl-policy-eval-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const object = `apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata: {name: podinfo, namespace: apps}
spec:
  imageRepositoryRef: {name: podinfo}
  filterTags: {pattern: '^release-(?P<v>.*)$', extract: '$v'}
  policy: {semver: {range: '>=1.0.0'}}
`;
  const tags = 'release-1.0.0\nrelease-1.2.0\r\n\nrelease-1.9.0.sig\nrelease-junk\nv3.0.0\n';

  test('prints the selected tag for a whole ImagePolicy', () => {
    const r = pawl(['--policy', file('p.yaml', object), '--tags', file('t.txt', tags)]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'release-1.2.0\n');
  });

  test('reads a bare spec (JSON) and tags from stdin; --json shows the ranking', () => {
    const spec = file(
      's.json',
      JSON.stringify({
        policy: { numerical: { order: 'asc' } },
        filterTags: { pattern: '-(?P<ts>[0-9]+)$', extract: '$ts' },
      }),
    );
    const r = pawl(['--policy', spec, '--tags', '-', '--json'], 'main-a-10\nmain-b-9\nother\n');
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(out.tag, 'main-a-10');
    assert.deepEqual(out.candidates, [
      { tag: 'main-a-10', extracted: '10', key: 'numerical 10' },
      { tag: 'main-b-9', extracted: '9', key: 'numerical 9' },
    ]);
    assert.equal(out.filteredOut, 1);
    assert.equal(out.excluded, 0);
  });

  test('the default exclusion list drops signatures; --exclude replaces it', () => {
    const p = file('alpha.yaml', 'policy: {alphabetical: {}}\n');
    const t = file('alpha.txt', 'a\nz.sig\nb\n');
    assert.equal(pawl(['--policy', p, '--tags', t]).stdout, 'b\n');
    assert.equal(pawl(['--policy', p, '--tags', t, '--no-exclude']).stdout, 'z.sig\n');
    assert.equal(pawl(['--policy', p, '--tags', t, '--exclude', '^b$']).stdout, 'z.sig\n');
  });

  test('exit 1 with the reason when nothing is selected', () => {
    const r = pawl([
      '--policy',
      file('five.yaml', 'policy: {semver: {range: "5.x"}}\n'),
      '--tags',
      file('t2.txt', '1.0.0\n2.0.0\n'),
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      /no tag selected: unable to determine latest version from provided list \(2 outside the range "5.x"\)/,
    );
  });

  test('exit 2 naming the file and what is wrong: bad range, bad regex, bad exclusion, no policy', () => {
    const t = file('t3.txt', '1.0.0\n');
    let r = pawl(['--policy', file('r.yaml', 'policy: {semver: {range: "*-*"}}\n'), '--tags', t]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /r\.yaml: policy\.semver\.range: .*not a valid semver range/);
    r = pawl([
      '--policy',
      file('x.yaml', 'policy: {alphabetical: {}}\nfilterTags: {pattern: "("}\n'),
      '--tags',
      t,
    ]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /x\.yaml: filterTags\.pattern: .*invalid regular expression "\(": missing closing \)/,
    );
    r = pawl(['--policy', file('ok.yaml', 'policy: {alphabetical: {}}\n'), '--tags', t, '--exclude', '[=']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--exclude: exclusionList: invalid regular expression "\[="/);
    r = pawl(['--policy', file('none.yaml', 'filterTags: {pattern: x}\n'), '--tags', t]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /none\.yaml: policy/);
    r = pawl(['--policy', join(dir, 'missing.yaml'), '--tags', t]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot read --policy/);
  });

  test('a line no registry could list is evaluated as Flux does, with a warning naming file:line and the rule', () => {
    const r = pawl([
      '--policy',
      file('p.yaml', object),
      '--tags',
      file('bad.txt', 'release-1.0.0\n../../x\n'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'release-1.0.0\n');
    assert.match(
      r.stderr,
      /warning: .*bad\.txt:2: "\.\.\/\.\.\/x" is not a tag a registry could list \(a tag is 1 to 128 characters/,
    );
  });

  test("Flux's own numerical table with negative numbers (issue 23, item 8): the same answer, one warning a line", () => {
    // image-reflector-controller numerical_test.go, in policy-cases.json: "-62" is no registry tag.
    const tags = ['-62', '-88', '73', '72', '15', '16', '15', '29', '-33', '-91'];
    const r = pawl([
      '--policy',
      file('n.yaml', 'policy: {numerical: {}}\n'),
      '--tags',
      file('n.txt', tags.join('\n')),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '73\n');
    assert.equal(r.stderr.match(/is not a tag a registry could list/g)?.length, 4, r.stderr);
  });

  test('newestBuild takes build times from a second column', () => {
    const p = file('nb.yaml', 'policy: {newestBuild: {}}\n');
    const r = pawl([
      '--policy',
      p,
      '--tags',
      file('nb.txt', 'old 2024-01-01T00:00:00Z\nnew 2024-05-01T00:00:00Z\nnone\n'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'new\n');
  });
});
