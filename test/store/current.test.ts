/** The current tags a process keeps per list (src/store/current.ts), over a fake of its two reads. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CurrentTagsCache, type CurrentList } from '../../src/store/current.js';

// A real collection before each heap reading, so garbage is not mistaken for what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function fake() {
  const lists = new Map<string, CurrentList>();
  const rows = new Map<string, string[]>();
  const read: string[][] = [];
  const cache = new CurrentTagsCache({
    lists: async (repos) => repos.flatMap((r) => (lists.has(r) ? [lists.get(r)!] : [])),
    tags: async (ls) => {
      read.push(ls.map((l) => l.repository));
      // Strings of their own, as rows read from a database are.
      return new Map(
        ls.map((l) => [
          l.repository,
          JSON.parse(JSON.stringify(rows.get(`${l.repository} ${l.list}`) ?? [])) as string[],
        ]),
      );
    },
  });
  const put = (repository: string, list: number, tags: string[], checksum = tags.join(',')) => {
    lists.set(repository, { repository, image: 'i', list, checksum });
    rows.set(`${repository} ${list}`, tags);
  };
  return { cache, put, read };
}

test('each list is read once: asked again, only repositories whose list changed are read', async () => {
  const { cache, put, read } = fake();
  put('a', 1, ['2', '1']);
  put('b', 2, ['x']);
  const all = () => cache.of(['a', 'b', 'none']).then((m) => Object.fromEntries(m));
  assert.deepEqual(await all(), { a: ['1', '2'], b: ['x'], none: [] });
  assert.deepEqual(await all(), { a: ['1', '2'], b: ['x'], none: [] });
  assert.deepEqual(read, [['a', 'b']]);
  put('a', 3, ['1', '2', '3']);
  assert.deepEqual(await all(), { a: ['1', '2', '3'], b: ['x'], none: [] });
  assert.deepEqual(read, [['a', 'b'], ['a']]);
  assert.deepEqual(Object.fromEntries(await cache.of([])), {});
});

test('the same list id with another checksum (an id reused after a rollback) is read again', async () => {
  const { cache, put, read } = fake();
  put('a', 1, ['1']);
  await cache.of(['a']);
  put('a', 1, ['9']);
  assert.deepEqual((await cache.of(['a'])).get('a'), ['9']);
  assert.equal(read.length, 2);
});

test('callers get a copy: changing what one was given changes nothing for the next', async () => {
  const { cache, put } = fake();
  put('a', 1, ['1']);
  (await cache.of(['a'])).get('a')!.push('2');
  assert.deepEqual((await cache.of(['a'])).get('a'), ['1']);
});

test('tags come back as they were read, in code-unit order: a line break, an empty tag, none at all', async () => {
  const { cache, put } = fake();
  put('plain', 1, ['v2', 'v10', 'v1', 'Z', '😀', '\uffff']);
  put('broken', 2, ['b\nc', 'a']);
  put('empty-tag', 3, ['', 'x']);
  put('one', 4, ['only']);
  put('none', 5, []);
  for (let round = 0; round < 2; round++) {
    const got = Object.fromEntries(await cache.of(['plain', 'broken', 'empty-tag', 'one', 'none']));
    assert.deepEqual(got, {
      plain: ['Z', 'v1', 'v10', 'v2', '😀', '\uffff'],
      broken: ['a', 'b\nc'],
      'empty-tag': ['', 'x'],
      one: ['only'],
      none: [],
    });
  }
});

test('10,000 repositories of ten tags: each list kept as one string, not an array and ten strings', async () => {
  const { cache, put } = fake();
  const names = Array.from({ length: 10_000 }, (_, i) => `ns/app-${i}`);
  const tags = () => Array.from({ length: 10 }, (_, k) => `1.${k}.${Math.floor(Math.random() * 1e6)}`);
  names.forEach((n, i) => put(n, i + 1, tags(), `c${i}`));
  gc();
  const before = process.memoryUsage().heapUsed;
  const read = await cache.of(names);
  assert.equal(read.get('ns/app-7')!.length, 10);
  read.clear();
  gc();
  const kept = (process.memoryUsage().heapUsed - before) / names.length;
  // ~310 bytes a repository: its record, its checksum, its entry and one string of its tags. With
  // an array of ten strings: ~660.
  assert.ok(kept < 450, `${Math.round(kept)} bytes kept a repository`);
});
