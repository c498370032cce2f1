/** What every memory store does, the same on each backend (test/memory.test.ts: SQLite; memory-postgres.test.ts: PostgreSQL). */
import type { MemoryStore } from '../../src/memory';

export function memoryStoreContract(open: () => MemoryStore): void {
  let store: MemoryStore;
  let n = 0;
  /** A namespace of its own per test: the stores outlive the tests. */
  let ns: string;
  beforeAll(() => {
    store = open();
  });
  afterAll(async () => store?.close());
  beforeEach(() => {
    ns = `ns-${Date.now().toString(36)}-${++n}`;
  });

  test('put creates a memory at version 1, a second put replaces it whole at version 2; get reads it back', async () => {
    const first = await store.put({ namespace: ns }, 'diet', { text: 'vegetarian', metadata: { source: 'onboarding' } });
    expect(first).toMatchObject({ namespace: ns, key: 'diet', text: 'vegetarian', metadata: { source: 'onboarding' }, version: 1 });
    expect(first.createdAt).toBe(first.updatedAt);
    const second = await store.put({ namespace: ns }, 'diet', { text: 'vegan' });
    expect(second).toMatchObject({ text: 'vegan', metadata: {}, version: 2, createdAt: first.createdAt });
    expect(await store.get({ namespace: ns }, 'diet')).toEqual(second);
    expect(await store.get({ namespace: ns }, 'nothing')).toBeNull();
  });

  test('a write retried with the same idempotency key writes nothing and answers what the first did', async () => {
    const first = await store.put({ namespace: ns }, 'city', { text: 'Lisbon', idempotencyKey: `${ns}/call-1` });
    await store.put({ namespace: ns }, 'city', { text: 'Porto' }); // someone else, in between
    const retried = await store.put({ namespace: ns }, 'city', { text: 'Lisbon', idempotencyKey: `${ns}/call-1` });
    expect(retried).toEqual(first);
    expect(await store.get({ namespace: ns }, 'city')).toMatchObject({ text: 'Porto', version: 2 });
    expect(await store.delete({ namespace: ns }, 'city', { idempotencyKey: `${ns}/del-1` })).toBe(true);
    expect(await store.delete({ namespace: ns }, 'city', { idempotencyKey: `${ns}/del-1` })).toBe(true);
    expect(await store.delete({ namespace: ns }, 'city')).toBe(false);
  });

  test('concurrent writes with one idempotency key write once', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => store.put({ namespace: ns }, 'once', { text: 'x', idempotencyKey: `${ns}/same` })));
    expect(new Set(results.map((r) => r.version))).toEqual(new Set([1]));
    expect(await store.get({ namespace: ns }, 'once')).toMatchObject({ version: 1 });
  });

  test('tenants and namespaces are apart: the same key in each is its own memory, and nothing of one shows in another', async () => {
    await store.put({ namespace: ns, tenant: 'acme' }, 'k', { text: 'acme secret plan' });
    await store.put({ namespace: ns, tenant: 'globex' }, 'k', { text: 'globex secret plan' });
    await store.put({ namespace: `${ns}-other` }, 'k', { text: 'untenanted secret plan' });
    expect((await store.get({ namespace: ns, tenant: 'acme' }, 'k'))?.text).toBe('acme secret plan');
    expect(await store.get({ namespace: ns }, 'k')).toBeNull();
    expect((await store.list({ namespace: ns, tenant: 'globex' })).memories.map((m) => m.text)).toEqual(['globex secret plan']);
    expect((await store.search({ namespace: ns, tenant: 'acme' }, { query: 'secret' })).map((h) => h.text)).toEqual(['acme secret plan']);
    expect(await store.search({ namespace: ns }, { query: 'secret' })).toEqual([]);
    expect(await store.delete({ namespace: ns, tenant: 'initech' }, 'k')).toBe(false);
  });

  test('list goes by key a page at a time, with a prefix', async () => {
    for (const key of ['b.2', 'a.1', 'b.1', 'c', 'b.3']) await store.put({ namespace: ns }, key, { text: `text of ${key}` });
    const first = await store.list({ namespace: ns }, { limit: 2 });
    expect(first.memories.map((m) => m.key)).toEqual(['a.1', 'b.1']);
    expect(first.next).toBe('b.1');
    const rest = await store.list({ namespace: ns }, { after: first.next!, limit: 10 });
    expect(rest).toMatchObject({ next: null });
    expect(rest.memories.map((m) => m.key)).toEqual(['b.2', 'b.3', 'c']);
    expect((await store.list({ namespace: ns }, { prefix: 'b.' })).memories.map((m) => m.key)).toEqual(['b.1', 'b.2', 'b.3']);
    // `_` and `%` are no wildcards in a prefix.
    await store.put({ namespace: ns }, 'b_x', { text: 'underscore' });
    expect((await store.list({ namespace: ns }, { prefix: 'b_' })).memories.map((m) => m.key)).toEqual(['b_x']);
  });

  test('search matches any word of the query in key or text, stemmed, best first; operators are plain words', async () => {
    await store.put({ namespace: ns }, 'diet', { text: 'The user is vegetarian and avoids mushrooms' });
    await store.put({ namespace: ns }, 'pets', { text: 'Has two cats called Miso and Tofu' });
    await store.put({ namespace: ns }, 'travel', { text: 'Prefers trains to planes; likes cats too' });
    const hits = await store.search({ namespace: ns }, { query: 'what does the user eat? vegetarian mushroom' });
    expect(hits[0]).toMatchObject({ key: 'diet' });
    expect(hits.map((h) => h.key)).not.toContain('pets');
    const cats = await store.search({ namespace: ns }, { query: 'cat' }); // stemmed: cats
    expect(cats.map((h) => h.key).sort()).toEqual(['pets', 'travel']);
    expect((await store.search({ namespace: ns }, { query: 'diet' })).map((h) => h.key)).toEqual(['diet']); // the key counts
    expect((await store.search({ namespace: ns }, { query: 'cats', limit: 1 })).length).toBe(1);
    for (const query of ['"cats', 'cats OR', 'NEAR(cats)', "cats' & | !", 'cats*']) {
      expect((await store.search({ namespace: ns }, { query })).map((h) => h.key).sort()).toEqual(['pets', 'travel']);
    }
    expect(await store.search({ namespace: ns }, { query: '*' })).toEqual([]);
  });

  test('bad names and texts are refused with what is wrong', async () => {
    await expect(store.put({ namespace: 'has space' }, 'k', { text: 'x' })).rejects.toThrow(/memory namespace.*must be 1-128 characters/);
    await expect(store.put({ namespace: ns }, '../etc', { text: 'x' })).rejects.toThrow(/memory key/);
    await expect(store.put({ namespace: ns }, 'k', { text: '   ' })).rejects.toThrow(/text: must be a non-empty string/);
  });
}
