/** The current tags a process keeps per list (src/store/current.ts), over a fake of its two reads. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CurrentTagsCache, type CurrentList } from '../../src/store/current.js';

function fake() {
  const lists = new Map<string, CurrentList>();
  const rows = new Map<string, string[]>();
  const read: string[][] = [];
  const cache = new CurrentTagsCache({
    lists: async (repos) => repos.flatMap((r) => (lists.has(r) ? [lists.get(r)!] : [])),
    tags: async (ls) => {
      read.push(ls.map((l) => l.repository));
      return new Map(ls.map((l) => [l.repository, rows.get(`${l.repository} ${l.list}`) ?? []]));
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
