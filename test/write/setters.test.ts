import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  mkdtemp,
  mkdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
  chmod,
  readdir,
  link,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { findMarkers, parseSetterName, setterFromComment } from '../../src/write/setters/markers.js';
import { plainIsSafe, rewrite, splice, valueFor, type ImageValue } from '../../src/write/setters/rewrite.js';
import {
  applySetters,
  FileChangedError,
  parseImage,
  planEdits,
  rewriteFileSync,
  writeSpliceSync,
} from '../../src/write/setters/apply.js';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { checkUpdatePath, scanTree } from '../../src/write/setters/tree.js';
import { UsageError } from '../../src/util/errors.js';
import { parseImageOptions } from '../../src/cli/commands/setters.js';

const M = (s: string): string => `# {"$imagepolicy": "${s}"}`;

function applyText(text: string, images: Record<string, string>): string {
  const { markers, error } = findMarkers(text, 'f.yaml');
  assert.equal(error, null);
  const map = new Map(Object.entries(images).map(([k, v]) => [k, parseImage(v)]));
  return rewrite(text, planEdits(markers, map));
}

const temps: string[] = [];
after(async () => {
  for (const t of temps) await rm(t, { recursive: true, force: true });
});
async function tempTree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'pawl-setters-'));
  temps.push(root);
  for (const [p, text] of Object.entries(files)) {
    await mkdir(join(root, p, '..'), { recursive: true });
    await writeFile(join(root, p), text);
  }
  return root;
}

describe('setter names and comments', () => {
  test('the four setter kinds', () => {
    assert.deepEqual(parseSetterName('ns:p'), { policy: { namespace: 'ns', name: 'p' }, field: 'image' });
    assert.equal(parseSetterName('ns:p:tag')?.field, 'tag');
    assert.equal(parseSetterName('ns:p:name')?.field, 'name');
    assert.equal(parseSetterName('ns:p:digest')?.field, 'digest');
    assert.equal(parseSetterName('ns:p:version'), null);
    assert.equal(parseSetterName('p'), null);
    assert.equal(parseSetterName(':p'), null);
  });

  test('only a whole-comment JSON object of strings is a marker', () => {
    assert.equal(setterFromComment(' {"$imagepolicy": "a:b"}'), 'a:b');
    assert.equal(setterFromComment('# {"$imagepolicy": "a:b"}'), 'a:b');
    assert.equal(setterFromComment(' {"$imagepolicy": "a:b"} and more'), null);
    assert.equal(setterFromComment(' {"$imagepolicy": 3}'), null);
    assert.equal(setterFromComment(' {"$imagepolicy": ""}'), null);
    assert.equal(setterFromComment(' see "$imagepolicy" docs'), null);
  });
});

describe('findMarkers', () => {
  test('map values and sequence items, not keys; lines are 1-based', () => {
    const text = ['a:', `  image: foo:v1 ${M('ns:p')}`, 'list:', `- bar:v1 ${M('ns:q:tag')}`, ''].join('\n');
    const { markers } = findMarkers(text, 'f.yaml');
    assert.deepEqual(
      markers.map((m) => [m.line, m.setter, m.field, m.value, text.slice(m.start, m.end)]),
      [
        [2, 'ns:p', 'image', 'foo:v1', 'foo:v1'],
        [4, 'ns:q:tag', 'tag', 'bar:v1', 'bar:v1'],
      ],
    );
  });

  test('documents split at `---` lines only; each marker keeps its own line number', () => {
    const text = [
      `a: x:1 ${M('ns:a')}`,
      '--- # second',
      `b: x:1 ${M('ns:b')}`,
      'c: "---"',
      '----: dashes',
      '---',
      `d: x:1 ${M('ns:d')}`,
      '---\r',
      `e: x:1 ${M('ns:e')}`,
      '',
    ].join('\n');
    const { markers, error } = findMarkers(text, 'f.yaml');
    assert.equal(error, null);
    assert.deepEqual(
      markers.map((m) => [m.line, m.setter, text.slice(m.start, m.end)]),
      [
        [1, 'ns:a', 'x:1'],
        [3, 'ns:b', 'x:1'],
        [7, 'ns:d', 'x:1'],
        [9, 'ns:e', 'x:1'],
      ],
    );
  });

  test('a parse error after markers names its own line', () => {
    const text = `a: x:1 ${M('ns:a')}\n---\nb: x:1 ${M('ns:b')}\nc: x: y\n`;
    assert.match(findMarkers(text, 'f.yaml').error ?? '', /^line 4: /);
  });

  test('a marker inside a block scalar is text, not a marker', () => {
    const text = `patch: |\n  image: foo ${M('ns:p')}\nother: x\n`;
    assert.deepEqual(findMarkers(text, 'f.yaml').markers, []);
  });

  test('comment on the next line does not mark the scalar above', () => {
    const text = `image: foo:v1\n${M('ns:p')}\n`;
    assert.deepEqual(findMarkers(text, 'f.yaml').markers, []);
  });

  test('a parse error names the line and yields no markers', () => {
    const r = findMarkers(`a: [b ${M('ns:p')}\nc: d\n`, 'f.yaml');
    assert.deepEqual(r.markers, []);
    assert.match(r.error ?? '', /^line \d+: /);
  });

  test('numbers keep their source text as the value', () => {
    const [m] = findMarkers(`tag: 1.10 ${M('ns:p:tag')}\n`, 'f.yaml').markers;
    assert.equal(m?.value, '1.10');
  });
});

describe('valueFor and parseImage', () => {
  const marker = (field: string) => findMarkers(`x: y ${M(`ns:p${field}`)}\n`, 'f').markers[0]!;
  const withDigest: ImageValue = { name: 'reg.io:5000/app', tag: 'v1', digest: 'sha256:abc' };

  test('each field kind, with and without a digest', () => {
    assert.equal(valueFor(marker(''), withDigest), 'reg.io:5000/app:v1@sha256:abc');
    // Flux's :tag setter is LatestRef.Tag — the digest is not appended.
    assert.equal(valueFor(marker(':tag'), withDigest), 'v1');
    assert.equal(valueFor(marker(':name'), withDigest), 'reg.io:5000/app');
    assert.equal(valueFor(marker(':digest'), withDigest), 'sha256:abc');
    assert.equal(valueFor(marker(''), { name: 'a', tag: 't' }), 'a:t');
    assert.equal(valueFor(marker(':digest'), { name: 'a', tag: 't' }), '');
  });

  test('parseImage splits like ImageToRef and knows registry ports', () => {
    assert.deepEqual(parseImage('image:v1.0.0@sha256:6745aa'), {
      name: 'image',
      tag: 'v1.0.0',
      digest: 'sha256:6745aa',
    });
    assert.deepEqual(parseImage('localhost:5000/app:1.2'), { name: 'localhost:5000/app', tag: '1.2' });
    assert.deepEqual(parseImage('registry.example.com/team/updated:v1.0.1'), {
      name: 'registry.example.com/team/updated',
      tag: 'v1.0.1',
    });
    assert.throws(() => parseImage('localhost:5000/app'), /no tag/);
    assert.throws(() => parseImage('app:'), /empty tag/);
    assert.throws(() => parseImage(':1'), /no name/);
    assert.throws(() => parseImage('app:1@nodigest'), /digest/);
    assert.throws(() => parseImage(''), /invalid image/);
  });

  test('--image options: malformed ones are usage errors', () => {
    assert.deepEqual([...parseImageOptions(['ns:p=app:1']).entries()], [['ns:p', { name: 'app', tag: '1' }]]);
    assert.throws(() => parseImageOptions(['ns/p=app:1']), UsageError);
    assert.throws(() => parseImageOptions(['ns:p=app']), UsageError);
    assert.throws(() => parseImageOptions(['ns:p']), UsageError);
    assert.throws(() => parseImageOptions(['ns:p=app:1', 'ns:p=app:2']), UsageError);
  });
});

describe('quoting', () => {
  test('values plain YAML would misread are double-quoted when the original was plain', () => {
    for (const v of [
      '1.10',
      '20240101',
      'true',
      'null',
      '0x1F',
      '1e3',
      'yes',
      'on',
      '2024-01-01',
      '0777',
      '~',
    ]) {
      const out = applyText(`tag: v1 ${M('ns:p:tag')}\n`, { 'ns:p': `app:${v}` });
      assert.equal(out, `tag: "${v}" ${M('ns:p:tag')}\n`, v);
      assert.equal((parse(out) as { tag: unknown }).tag, v);
    }
    assert.equal(plainIsSafe('', false), false);
    assert.equal(plainIsSafe('v1.10', false), true);
    assert.equal(plainIsSafe('a,b', true), false);
    assert.equal(plainIsSafe('a,b', false), true);
    assert.equal(plainIsSafe('#x', false), false);
  });

  test('quotes stay as they were', () => {
    assert.equal(
      applyText(`tag: 'v1' ${M('ns:p:tag')}\n`, { 'ns:p': "a:it's" }),
      `tag: 'it''s' ${M('ns:p:tag')}\n`,
    );
    assert.equal(
      applyText(`tag: "v1" ${M('ns:p:tag')}\n`, { 'ns:p': 'a:1.10' }),
      `tag: "1.10" ${M('ns:p:tag')}\n`,
    );
    assert.equal(
      applyText(`tag: 'v1' ${M('ns:p:tag')}\n`, { 'ns:p': 'a:1.10' }),
      `tag: '1.10' ${M('ns:p:tag')}\n`,
    );
    assert.equal(applyText(`tag: v1 ${M('ns:p:tag')}\n`, { 'ns:p': 'a:v2' }), `tag: v2 ${M('ns:p:tag')}\n`);
  });

  test('an empty digest is written quoted, not as null', () => {
    const out = applyText(`d: sha256:abc ${M('ns:p:digest')}\n`, { 'ns:p': 'a:1' });
    assert.equal(out, `d: "" ${M('ns:p:digest')}\n`);
  });

  test('flow sequences quote flow indicators', () => {
    const text = `images: [a:1, b:1] ${M('ns:p')}\nx: [a:1 ${M('ns:p')}\n  ]\n`;
    const out = applyText(text, { 'ns:p': 'c:2' });
    assert.deepEqual(parse(out), { images: ['a:1', 'b:1'], x: ['c:2'] });
  });
});

describe('rewrite keeps every other byte', () => {
  test('CRLF, BOM, comments, blank lines, anchors and tags', () => {
    const text = `\uFEFF# head\r\n\r\napp:\r\n  image: &img !!str foo:v1   ${M('ns:p')}\r\n\r\n  copy: *img # alias\r\n`;
    const out = applyText(text, { 'ns:p': 'foo:v2' });
    assert.equal(out, text.replace('foo:v1', 'foo:v2'));
    assert.deepEqual(parse(out.slice(1)), { app: { image: 'foo:v2', copy: 'foo:v2' } });
  });

  test('multi-document files and document markers', () => {
    const text = `---\na: 1 # not a marker\n...\n---\nimage: x:1 ${M('ns:p')}\n---\nimage: y:1 ${M('ns:q')}\n`;
    const out = applyText(text, { 'ns:p': 'x:2' });
    assert.equal(out, text.replace('x:1', 'x:2'));
    assert.deepEqual(
      parseAllDocuments(out).map((d) => d.toJS()),
      [{ a: 1 }, { image: 'x:2' }, { image: 'y:1' }],
    );
  });

  test('a marked block scalar becomes a flow scalar on its header line', () => {
    const text = `image: | ${M('ns:p')}\n  foo:v1\nnext: 1\n`;
    const out = applyText(text, { 'ns:p': 'foo:v2' });
    assert.equal(out, `image: foo:v2 ${M('ns:p')}\nnext: 1\n`);
  });

  test('block scalar headers with chomping and indentation indicators are replaced whole', () => {
    for (const header of ['|-', '>-', '|2', '|+', '>', '>2-', '|-2']) {
      const text = `image: ${header} ${M('ns:p')}\n  foo:v1\nnext: 1\n`;
      const out = applyText(text, { 'ns:p': 'foo:v2' });
      assert.equal(out, `image: foo:v2 ${M('ns:p')}\nnext: 1\n`, header);
      assert.deepEqual(parseAllDocuments(out)[0]!.toJS(), { image: 'foo:v2', next: 1 }, header);
    }
  });

  test('Kustomization images: entries with :name, :tag and :digest markers', () => {
    const text = [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'images:',
      '  - name: podinfo',
      `    newName: ghcr.io/old/podinfo ${M('apps:podinfo:name')}`,
      `    newTag: "6.0.0" ${M('apps:podinfo:tag')}`,
      `    digest: sha256:000 ${M('apps:podinfo:digest')}`,
      '',
    ].join('\n');
    const out = applyText(text, { 'apps:podinfo': 'ghcr.io/stefanprodan/podinfo:6.5.0@sha256:111' });
    assert.equal(
      out,
      text
        .replace('ghcr.io/old/podinfo', 'ghcr.io/stefanprodan/podinfo')
        .replace('"6.0.0"', '"6.5.0"')
        .replace('sha256:000', 'sha256:111'),
    );
  });

  test('Helm values: repository and tag set separately', () => {
    const text = `image:\n  repository: ghcr.io/org/app ${M('apps:app:name')}\n  tag: 1.2.3 ${M('apps:app:tag')}\n  pullPolicy: IfNotPresent\n`;
    const out = applyText(text, { 'apps:app': 'ghcr.io/org/app:1.3.0' });
    assert.equal(out, text.replace('1.2.3', '1.3.0'));
  });

  test('a marker for a policy with no image, or the same value, is untouched', () => {
    const text = `a: x:1 ${M('ns:p')}\nb: y:1 ${M('ns:other')}\n`;
    const { markers } = findMarkers(text, 'f.yaml');
    assert.deepEqual(planEdits(markers, new Map([['ns:p', parseImage('x:1')]])), []);
  });
});

describe('trees', () => {
  test('update.path must be relative and stay inside', () => {
    assert.equal(checkUpdatePath('./yes'), 'yes');
    assert.equal(checkUpdatePath('.'), '');
    assert.throws(() => checkUpdatePath('../x'), /\.\./);
    assert.throws(() => checkUpdatePath('a/../../x'), /\.\./);
    assert.throws(() => checkUpdatePath('/etc'), /absolute/);
  });

  test('file discovery: yaml, yml, Kustomization; screened by the token; .git skipped', async () => {
    const marked = `image: a:1 ${M('ns:p')}\n`;
    const root = await tempTree({
      'a.yaml': marked,
      'b/c.yml': marked,
      'd/Kustomization': marked,
      'e.json': marked,
      'f.yaml': 'image: a:1\n',
      '.git/x.yaml': marked,
      'g.txt': marked,
    });
    const scan = await scanTree(root, '.');
    assert.deepEqual(
      scan.files.map((f) => f.file),
      ['a.yaml', 'b/c.yml', 'd/Kustomization'],
    );
  });

  test('symlinks: out of the tree skipped with a warning, dangling skipped silently, inside read once', async () => {
    const outside = await tempTree({ 'x.yaml': `image: a:1 ${M('ns:p')}\n` });
    const root = await tempTree({ 'real.yaml': `image: a:1 ${M('ns:p')}\n` });
    await symlink(join(outside, 'x.yaml'), join(root, 'out.yaml'));
    await symlink('missing.yaml', join(root, 'dangling.yaml'));
    await symlink('real.yaml', join(root, 'link.yaml'));
    await symlink(outside, join(root, 'outdir'));
    const res = await applySetters(root, '.', new Map([['ns:p', parseImage('a:2')]]));
    assert.deepEqual(res.filesWritten, ['real.yaml']);
    assert.deepEqual(
      res.warnings.map((w) => w.file),
      ['out.yaml'],
    );
    assert.deepEqual(res.errors, []);
    assert.equal(await readFile(join(outside, 'x.yaml'), 'utf8'), `image: a:1 ${M('ns:p')}\n`);
    assert.equal(await readFile(join(root, 'link.yaml'), 'utf8'), `image: a:2 ${M('ns:p')}\n`);
    assert.ok((await readdir(root)).includes('link.yaml'));
  });

  test('an update path that is a symlink out of the tree is refused', async () => {
    const outside = await tempTree({ 'x.yaml': `image: a:1 ${M('ns:p')}\n` });
    const root = await tempTree({});
    await symlink(outside, join(root, 'apps'));
    await assert.rejects(scanTree(root, 'apps'), /outside the repository/);
  });

  test('a file that fails to parse is reported by name and nothing is written', async () => {
    const root = await tempTree({
      'good.yaml': `image: a:1 ${M('ns:p')}\n`,
      'sub/bad.yaml': `image: [a:1 ${M('ns:p')}\nx: y\n`,
    });
    const res = await applySetters(root, '.', new Map([['ns:p', parseImage('a:2')]]));
    assert.deepEqual(
      res.errors.map((e) => e.file),
      ['sub/bad.yaml'],
    );
    assert.match(res.errors[0]!.message, /line \d+/);
    assert.deepEqual(res.filesWritten, []);
    assert.equal(res.changes.length, 1);
    assert.equal(await readFile(join(root, 'good.yaml'), 'utf8'), `image: a:1 ${M('ns:p')}\n`);
  });

  test('writes keep the file mode, leave no temp files, and honour --dry-run', async () => {
    const root = await tempTree({ 'a.yaml': `image: a:1 ${M('ns:p')}\n` });
    await chmod(join(root, 'a.yaml'), 0o640);
    const images = new Map([['ns:p', parseImage('a:2')]]);
    const dry = await applySetters(root, '.', images, { dryRun: true });
    assert.equal(dry.changes.length, 1);
    assert.deepEqual(dry.filesWritten, []);
    assert.equal(await readFile(join(root, 'a.yaml'), 'utf8'), `image: a:1 ${M('ns:p')}\n`);
    const res = await applySetters(root, '.', images);
    assert.deepEqual(res.changes, [
      { file: 'a.yaml', line: 1, setter: 'ns:p', policy: 'ns/p', old: 'a:1', new: 'a:2' },
    ]);
    assert.equal((await stat(join(root, 'a.yaml'))).mode & 0o777, 0o640);
    assert.deepEqual(await readdir(root), ['a.yaml']);
  });

  test('a changed file keeps its inode: hard links see the new text', async () => {
    const root = await tempTree({ 'a.yaml': `image: a:1 ${M('ns:p')}\n` });
    await link(join(root, 'a.yaml'), join(root, 'a.link'));
    const before = await stat(join(root, 'a.yaml'));
    await applySetters(root, '.', new Map([['ns:p', parseImage('a:2')]]));
    assert.equal((await stat(join(root, 'a.yaml'))).ino, before.ino);
    assert.equal(await readFile(join(root, 'a.link'), 'utf8'), `image: a:2 ${M('ns:p')}\n`);
  });

  test('a file that cannot be written is named, left out of filesWritten, and the others are written', async () => {
    // Two names of one file (a hard link): the first write changes the second name's text, which is
    // then no longer what pawl read, so its write is refused — the one failure a test can cause
    // between the read and the write without root.
    const root = await tempTree({
      'a.yaml': `image: a:1 ${M('ns:p')}\n`,
      'c.yaml': `image: c:1 ${M('ns:q')}\n`,
    });
    await link(join(root, 'a.yaml'), join(root, 'b.yaml'));
    const res = await applySetters(
      root,
      '.',
      new Map([
        ['ns:p', parseImage('a:2')],
        ['ns:q', parseImage('c:2')],
      ]),
    );
    assert.deepEqual(res.filesWritten, ['a.yaml', 'c.yaml']);
    assert.deepEqual(
      res.errors.map((e) => [e.file, e.message]),
      [
        [
          'b.yaml',
          'cannot write: it changed since pawl read it, so pawl left it as it is; run the command again',
        ],
      ],
    );
    assert.equal(res.changes.length, 3);
    assert.equal(await readFile(join(root, 'b.yaml'), 'utf8'), `image: a:2 ${M('ns:p')}\n`);
    assert.equal(await readFile(join(root, 'c.yaml'), 'utf8'), `image: c:2 ${M('ns:q')}\n`);
  });
});

describe('rewriteFileSync writes only what changed', () => {
  // Each case: the file's text, then the new one. The file on disk must end as the new text
  // whatever the lengths and characters around the change.
  const cases: [string, string, string][] = [
    ['same length', 'a: x:1.2.3 # m\nb: 1\n', 'a: x:1.2.4 # m\nb: 1\n'],
    ['longer', 'a: x:1.9.0\nb: 1\n', 'a: x:1.10.0\nb: 1\n'],
    ['shorter', 'a: x:1.10.0\nb: 1\n', 'a: x:1.9.0\nb: 1\n'],
    ['two changes, same length', 'a: 1.0\nz: é\nb: 1.0\n', 'a: 2.0\nz: é\nb: 2.0\n'],
    ['multi-byte characters before and after', 'é😀: v1 # ü\r\n', 'é😀: v2 # ü\r\n'],
    ['a change next to an astral character', 'k: 😀1\n', 'k: 😁1\n'],
    // U+1F600 and U+1F200 share their low surrogate: the common suffix must not start inside a pair.
    ['astral characters that differ only in the high surrogate', 'k: 😀\n', 'k: 🈀\n'],
    ['a change from ASCII to a multi-byte character', 'k: a\nz\n', 'k: é\nz\n'],
    ['everything', 'old\n', 'new text\n'],
    ['to empty', 'abc', ''],
  ];
  for (const [name, before, after] of cases) {
    test(name, async () => {
      const root = await tempTree({ 'f.yaml': before });
      rewriteFileSync(join(root, 'f.yaml'), before, after);
      assert.equal(await readFile(join(root, 'f.yaml'), 'utf8'), after);
    });
  }

  test('generated edits: the file always ends as the new text', async () => {
    const alphabet = ['a', 'b', '1', '.', ':', ' ', '\n', '\r\n', 'é', '€', '😀', '😁', '🈀'];
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    // Arrays of characters, cut between characters: a lone surrogate is not text a file holds.
    const word = (n: number): string[] => Array.from({ length: n }, () => alphabet[rand(alphabet.length)]!);
    const root = await tempTree({ 'f.yaml': '' });
    const path = join(root, 'f.yaml');
    for (let k = 0; k < 300; k++) {
      const chars = word(rand(40));
      const cut = rand(chars.length + 1);
      const end = cut + rand(chars.length - cut + 1);
      const before = chars.join('');
      const after = [...chars.slice(0, cut), ...word(rand(6)), ...chars.slice(end)].join('');
      await writeFile(path, before);
      rewriteFileSync(path, before, after);
      assert.equal(await readFile(path, 'utf8'), after, JSON.stringify({ before, after }));
    }
  });

  test('a write that fails part-way is undone from the text read, and its error is thrown', async () => {
    // A file size limit (`ulimit -f`, 1,024 bytes, SIGXFSZ ignored) lets the first 1,024 bytes of
    // the longer text through and refuses the rest with EFBIG: the file is half new when the write
    // fails, and must end as it was read.
    const before = `${'a: 1\n'.repeat(160)}`; // 800 bytes
    const after = `${'a: 22\n'.repeat(250)}`; // 1,500 bytes
    const root = await tempTree({ 'f.yaml': before });
    const child = join(root, 'child.ts');
    const apply = pathToFileURL(join(import.meta.dirname, '../../src/write/setters/apply.ts')).href;
    await writeFile(
      child,
      `import { rewriteFileSync } from ${JSON.stringify(apply)};
try {
  rewriteFileSync(${JSON.stringify(join(root, 'f.yaml'))}, ${JSON.stringify(before)}, ${JSON.stringify(after)});
  console.log('written');
} catch (err) {
  console.log((err as NodeJS.ErrnoException).code);
}
`,
    );
    const out = execFileSync(
      'bash',
      ['-c', `trap '' XFSZ; ulimit -f 1; exec "$0" --import tsx "$1"`, process.execPath, child],
      { encoding: 'utf8' },
    );
    assert.equal(out.trim(), 'EFBIG');
    assert.equal(await readFile(join(root, 'f.yaml'), 'utf8'), before);
  });

  test('a file changed since it was read is left as it is', async () => {
    const root = await tempTree({ 'f.yaml': 'a: x:1.0.0 # m\nb: 1\n' });
    const path = join(root, 'f.yaml');
    // A person edited the line meanwhile (same length), or added a line (another length).
    for (const now of ['a: x:1.0.5 # m\nb: 1\n', 'a: x:1.0.0 # m\nb: 1\nc: 2\n']) {
      await writeFile(path, now);
      assert.throws(
        () => rewriteFileSync(path, 'a: x:1.0.0 # m\nb: 1\n', 'a: x:2.0.0 # m\nb: 1\n'),
        (err: unknown) => err instanceof FileChangedError && /changed since pawl read it/.test(err.message),
      );
      assert.equal(await readFile(path, 'utf8'), now);
    }
    assert.throws(() => rewriteFileSync('/nonexistent/f.yaml', 'a: 1\n', 'a: 2\n'), { code: 'ENOENT' });
  });
});

describe('splice and writeSpliceSync: the span a rewrite changes, written without the new text', () => {
  const images = (tag: string) =>
    new Map([
      ['ns:a', parseImage(`reg/a:${tag}`)],
      ['ns:b', parseImage(`reg/b:${tag}`)],
    ]);
  // Multi-byte characters before, between and after the markers, CRLF line ends, a block scalar.
  const text = [
    `# é😀 owner: ü`,
    `a: reg/a:1.0.0 ${M('ns:a')}`,
    `between: "€ unchanged"`,
    `b: |- ${M('ns:b')}`,
    `  reg/b:1.0.0`,
    `after: 😁`,
    '',
  ].join('\r\n');

  test('the span runs from the first edit to the last, and rebuilds what rewrite writes', () => {
    const { markers } = findMarkers(text, 'f.yaml');
    const edits = planEdits(markers, images('1.10.0'));
    assert.equal(edits.length, 2);
    const s = splice(text, [...edits].reverse());
    assert.equal(s.start, markers[0]!.start);
    assert.equal(s.end, markers[1]!.end);
    assert.ok(s.replacement.includes('between: "€ unchanged"'));
    assert.equal(text.slice(0, s.start) + s.replacement + text.slice(s.end), rewrite(text, edits));
    assert.deepEqual(splice(text, []), { start: 0, end: 0, replacement: '' });
    assert.throws(() => splice(text, [edits[0]!, edits[0]!]), /overlapping setter edits/);
  });

  for (const [name, tag] of [
    ['the same length', '2.0.0'],
    ['longer', '10.20.30'],
    ['shorter', '2'],
  ] as const) {
    test(`a change ${name}: the file ends as rewrite's text`, async () => {
      const root = await tempTree({ 'f.yaml': text });
      const path = join(root, 'f.yaml');
      const edits = planEdits(findMarkers(text, 'f.yaml').markers, images(tag));
      writeSpliceSync(path, text, splice(text, edits));
      assert.equal(await readFile(path, 'utf8'), rewrite(text, edits));
    });
  }

  test('a file larger than the reused buffers is checked whole too', async () => {
    const pad = Array.from({ length: 5000 }, (_, i) => `pad${i}: 0123456789abcdef\n`).join(''); // ~125 KB
    const big = `${text}${pad}`;
    const root = await tempTree({ 'f.yaml': big });
    const path = join(root, 'f.yaml');
    const edits = planEdits(findMarkers(big, 'f.yaml').markers, images('3.0.0'));
    assert.equal(edits.length, 2);
    // One byte changed near the end, past the first 64 KB: left as it is.
    const edited = `${big.slice(0, -2)}g\n`;
    await writeFile(path, edited);
    assert.throws(() => writeSpliceSync(path, big, splice(big, edits)), FileChangedError);
    assert.equal(await readFile(path, 'utf8'), edited);
    await writeFile(path, big);
    writeSpliceSync(path, big, splice(big, edits));
    assert.equal(await readFile(path, 'utf8'), rewrite(big, edits));
  });

  test('a small file changed since it was read, in its last byte, is left as it is', async () => {
    const root = await tempTree({ 'f.yaml': text });
    const path = join(root, 'f.yaml');
    const edits = planEdits(findMarkers(text, 'f.yaml').markers, images('3.0.0'));
    const edited = `${text.slice(0, -1)}x`;
    await writeFile(path, edited);
    assert.throws(() => writeSpliceSync(path, text, splice(text, edits)), FileChangedError);
    assert.equal(await readFile(path, 'utf8'), edited);
  });
});
