/**
 * The PostgreSQL memory store on a real PostgreSQL (Debian's server, started here on a free port): the stores'
 * contract, then memory across runs on the real dev server with PostgreSQL behind the tools.
 */
import { PostgresMemoryStore } from '../src/memory/postgres';
import { memoryStoreContract } from './support/memory-contract';
import { memoryRunsSuite } from './support/memory-runs';
import { startTestPostgres, type TestPostgres } from './support/postgres';

let pg: TestPostgres;
beforeAll(async () => {
  pg = await startTestPostgres();
}, 60_000);
afterAll(async () => pg?.stop());

describe('PostgresMemoryStore', () => {
  memoryStoreContract(() => new PostgresMemoryStore(pg.url));

  test('workers starting together make the tables once, without a race', async () => {
    const stores = Array.from({ length: 4 }, () => new PostgresMemoryStore(pg.url));
    try {
      await Promise.all(stores.map((s, i) => s.put({ namespace: 'boot' }, `k${i}`, { text: `worker ${i}` })));
      expect((await stores[0]!.list({ namespace: 'boot' })).memories).toHaveLength(4);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

describe('runs with memory on PostgreSQL', () => {
  memoryRunsSuite(() => new PostgresMemoryStore(pg.url));
});
