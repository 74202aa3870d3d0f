/**
 * One table of image references with Docker's rules (distribution/reference ParseNormalizedNamed),
 * run through the module and through every caller: configuration's spec.image check, the
 * scanner's registry reference, the guard's marker values and the setters' --image values.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  familiarName,
  isValidTag,
  normalizedName,
  parseReference,
  sameImageName,
  splitImage,
} from '../../src/image/index.js';
import { imageRepositoryProblem } from '../../src/config/imageref.js';
import { parseImageReference, parseRepositoryRef } from '../../src/scan/registry/reference.js';
import { canonicalImageName, parseMarkerValue } from '../../src/guard/index.js';
import { parseImage } from '../../src/write/setters/apply.js';

const D = 'sha256:' + 'c'.repeat(64);

interface Case {
  input: string;
  domain: string;
  path: string;
  familiar: string;
  tag?: string;
  digest?: string;
}

const valid: Case[] = [
  // Docker Hub short names and library/
  { input: 'nginx', domain: 'docker.io', path: 'library/nginx', familiar: 'nginx' },
  { input: 'library/nginx', domain: 'docker.io', path: 'library/nginx', familiar: 'nginx' },
  { input: 'bitnami/redis', domain: 'docker.io', path: 'bitnami/redis', familiar: 'bitnami/redis' },
  { input: 'docker.io/nginx', domain: 'docker.io', path: 'library/nginx', familiar: 'nginx' },
  {
    input: 'docker.io/library/nginx:1.27',
    domain: 'docker.io',
    path: 'library/nginx',
    familiar: 'nginx',
    tag: '1.27',
  },
  { input: 'a/b/c', domain: 'docker.io', path: 'a/b/c', familiar: 'a/b/c' },
  // index.docker.io is Docker Hub's legacy name (and registry-1.docker.io its API host)
  { input: 'index.docker.io/nginx', domain: 'docker.io', path: 'library/nginx', familiar: 'nginx' },
  { input: 'index.docker.io/library/nginx', domain: 'docker.io', path: 'library/nginx', familiar: 'nginx' },
  { input: 'registry-1.docker.io/org/app', domain: 'docker.io', path: 'org/app', familiar: 'org/app' },
  // a registry host: a dot, a port, localhost
  { input: 'ghcr.io/org/app', domain: 'ghcr.io', path: 'org/app', familiar: 'ghcr.io/org/app' },
  { input: 'ghcr.io/app', domain: 'ghcr.io', path: 'app', familiar: 'ghcr.io/app' },
  {
    input: 'registry.example.com:5443/a/b:v2',
    domain: 'registry.example.com:5443',
    path: 'a/b',
    familiar: 'registry.example.com:5443/a/b',
    tag: 'v2',
  },
  { input: 'myhost:5000/app', domain: 'myhost:5000', path: 'app', familiar: 'myhost:5000/app' },
  { input: 'localhost/app', domain: 'localhost', path: 'app', familiar: 'localhost/app' },
  {
    input: 'localhost:5000/app:1.0',
    domain: 'localhost:5000',
    path: 'app',
    familiar: 'localhost:5000/app',
    tag: '1.0',
  },
  { input: '[::1]:5000/app', domain: '[::1]:5000', path: 'app', familiar: '[::1]:5000/app' },
  // `localhost` alone is a Docker Hub image
  { input: 'localhost', domain: 'docker.io', path: 'library/localhost', familiar: 'localhost' },
  // an uppercase first component is a host, kept as written
  { input: 'Registry/app', domain: 'Registry', path: 'app', familiar: 'Registry/app' },
  { input: 'Example.com/app:1', domain: 'Example.com', path: 'app', familiar: 'Example.com/app', tag: '1' },
  // digests and tags
  { input: `nginx@${D}`, domain: 'docker.io', path: 'library/nginx', familiar: 'nginx', digest: D },
  {
    input: `ghcr.io/org/app:1.2.3@${D}`,
    domain: 'ghcr.io',
    path: 'org/app',
    familiar: 'ghcr.io/org/app',
    tag: '1.2.3',
    digest: D,
  },
  { input: 'nginx:_under', domain: 'docker.io', path: 'library/nginx', familiar: 'nginx', tag: '_under' },
];

const invalid: [string, RegExp][] = [
  ['https://ghcr.io/org/app', /scheme/],
  ['ghcr.io/Org/app', /lowercase/],
  ['docker.io/Library/nginx', /lowercase/],
  ['NGINX', /lowercase/],
  ['app:-bad', /invalid tag/],
  ['app:.bad', /invalid tag/],
  [`app:${'t'.repeat(129)}`, /invalid tag/],
  ['app@sha256:xyz', /invalid digest/],
  ['ghcr.io//app', /not a valid image repository/],
  ['c'.repeat(64), /image ID/],
  ['', /empty/],
];

describe('image references (Docker rules), one table for every caller', () => {
  for (const c of valid) {
    const name = `${c.domain}/${c.path}`;
    const written = splitImage(c.input).name;
    test(`${c.input} → ${name}`, () => {
      // the module
      const r = parseReference(c.input);
      assert.deepEqual(
        { domain: r.domain, path: r.path, name: r.name, tag: r.tag, digest: r.digest },
        { domain: c.domain, path: c.path, name, tag: c.tag, digest: c.digest },
      );
      assert.equal(normalizedName(written), name);
      assert.equal(familiarName(r), c.familiar);
      assert.ok(sameImageName(written, name));
      // configuration: spec.image is the name alone
      assert.equal(imageRepositoryProblem(written), undefined);
      if (c.tag !== undefined || c.digest !== undefined)
        assert.match(imageRepositoryProblem(c.input) ?? '', /has a/);
      // the scanner
      const s = parseImageReference(c.input);
      assert.equal(s.repo.registry, c.domain);
      assert.equal(s.repo.path, c.path);
      assert.equal(s.repo.canonical, name);
      assert.equal(s.tag, c.tag);
      assert.equal(s.digest, c.digest);
      assert.equal(parseRepositoryRef(written).canonical, name);
      // the guard
      assert.equal(canonicalImageName(written), name);
      const m = parseMarkerValue('image', c.input);
      assert.deepEqual([m.name, m.tag, m.digest], [written, c.tag ?? null, c.digest ?? null]);
      // the setters (--image NAME:TAG[@DIGEST])
      if (c.tag !== undefined) {
        const w = parseImage(c.input);
        assert.deepEqual([normalizedName(w.name), w.tag, w.digest], [name, c.tag, c.digest]);
      }
    });
  }
  for (const [input, why] of invalid) {
    test(`rejects ${JSON.stringify(input.length > 70 ? input.slice(0, 20) + '…' : input)}`, () => {
      assert.throws(() => parseReference(input), why);
      assert.throws(() => parseImageReference(input), why);
    });
  }

  test('the guard and the scanner agree on hosts written with capitals (issue 8)', () => {
    for (const n of ['Registry/app', 'Example.com/app']) {
      assert.equal(canonicalImageName(n), parseRepositoryRef(n).canonical);
    }
    assert.ok(!sameImageName('Registry/app', 'docker.io/registry/app'));
  });

  test('isValidTag is the OCI tag grammar', () => {
    for (const t of ['1', 'v1.2.3', '_x', 'A-b.c_d', 'x'.repeat(128)]) assert.ok(isValidTag(t), t);
    for (const t of ['', '-x', '.x', 'x'.repeat(129), 'a/b', 'a:b', 'a+b']) assert.ok(!isValidTag(t), t);
  });
});
