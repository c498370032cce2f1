/**
 * The fleet's provider budget (src/quota) on a real redis-server: each `RedisBudget` is its own connection, as each
 * worker's would be, so two of them are two workers sharing one quota.
 */
import { randomUUID } from 'node:crypto';
import { RedisBudget, type RedisBudgetOptions } from '../src/quota/redis-budget';
import type { ChildProcess } from 'node:child_process';
import { freePort, startRedis } from './support/redis';

let redisProcess: ChildProcess;
const redis = { url: '' };
const open: RedisBudget[] = [];

beforeAll(async () => {
  const port = await freePort();
  redisProcess = await startRedis(port);
  redis.url = `redis://127.0.0.1:${port}`;
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
});
afterAll(() => {
  redisProcess?.kill('SIGKILL');
});

/** `workers` budgets over one fresh quota. */
async function fleet(workers: number, limits: Omit<RedisBudgetOptions, 'url' | 'name'>): Promise<RedisBudget[]> {
  const name = `test-${randomUUID()}`;
  const budgets = await Promise.all(Array.from({ length: workers }, () => RedisBudget.connect({ url: redis.url, name, ...limits })));
  open.push(...budgets);
  return budgets;
}

const now = () => Date.now();

describe('RedisBudget', () => {
  test('tokens per minute: grants until the bucket is empty, then says how long until the next fits', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 6_000 });
    expect(await a.tryAcquire('r1', 4_000, { arrivedMs: now() })).toMatchObject({ granted: true, tokens: 4_000 });
    // The other worker sees the same bucket: 2,000 left, so 3,000 waits for 1,000 more, about 10 s at 100 a second.
    const denied = await b.tryAcquire('r2', 3_000, { arrivedMs: now() });
    expect(denied).toMatchObject({ granted: false, position: 0 });
    expect(denied.granted === false && denied.waitMs).toBeGreaterThan(9_000);
    expect(denied.granted === false && denied.waitMs).toBeLessThanOrEqual(10_000);
    expect(await b.tryAcquire('r3', 2_000, { arrivedMs: now() })).toMatchObject({ granted: false, position: 1 }); // behind r2
  });

  test('settling gives back what a call reserved and did not use, and takes what it used beyond', async () => {
    const [a] = await fleet(1, { tokensPerMinute: 6_000 });
    const g = await a.tryAcquire('r1', 6_000, { arrivedMs: now() });
    expect(g.granted).toBe(true);
    expect(await a.tryAcquire('r2', 5_000, { arrivedMs: now() })).toMatchObject({ granted: false });
    await a.settle('r1', 6_000, 1_000); // the provider reported 1,000
    expect(await a.tryAcquire('r2', 5_000, { arrivedMs: now() })).toMatchObject({ granted: true });
    await a.settle('r2', 5_000, 11_000); // 6,000 over the estimate: the bucket owes them
    const after = await a.tryAcquire('r3', 1, { arrivedMs: now() });
    expect(after.granted === false && after.waitMs).toBeGreaterThan(55_000);
  });

  test('an estimate larger than the whole minute is capped to it, so it can run at all', async () => {
    const [a] = await fleet(1, { tokensPerMinute: 1_000 });
    expect(await a.tryAcquire('huge', 50_000, { arrivedMs: now() })).toMatchObject({ granted: true, tokens: 1_000 });
  });

  test('one queue for the fleet: a later call does not overtake the head, whichever worker asks', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 60_000 }); // 1,000 a second
    expect((await a.tryAcquire('fill', 60_000, { arrivedMs: now() })).granted).toBe(true);
    const t0 = now();
    const order: string[] = [];
    const big = a.acquire('big', 1_500).then(() => order.push('big'));
    await new Promise((r) => setTimeout(r, 50));
    const small = b.acquire('small', 100).then(() => order.push('small'));
    await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(now() - t0).toBeGreaterThanOrEqual(1_400); // the head waited for its 1,500 tokens
  });

  test('priority: a waiter of a higher priority (a lower number) goes first', async () => {
    const [a] = await fleet(1, { requestsPerMinute: 60 }); // one request a second
    for (let i = 0; i < 60; i++) expect((await a.tryAcquire(`fill-${i}`, 1, { arrivedMs: now() })).granted).toBe(true);
    const order: string[] = [];
    const low = a.acquire('low', 1, { priority: 9 }).then(() => order.push('low'));
    await new Promise((r) => setTimeout(r, 20));
    const high = a.acquire('high', 1, { priority: 0 }).then(() => order.push('high'));
    await Promise.all([low, high]);
    expect(order).toEqual(['high', 'low']);
  });

  test('concurrent requests: a slot frees on settle, and by itself when a worker dies holding it', async () => {
    const [a, b] = await fleet(2, { maxConcurrent: 1, leaseMs: 1_500 });
    expect((await a.tryAcquire('c1', 10, { arrivedMs: now() })).granted).toBe(true);
    expect(await b.tryAcquire('c2', 10, { arrivedMs: now() })).toMatchObject({ granted: false });
    await a.settle('c1', 10, 10);
    expect((await b.tryAcquire('c2', 10, { arrivedMs: now() })).granted).toBe(true);
    // c2's worker "dies": it never settles. The lease runs out and c3 gets the slot.
    const t0 = now();
    await a.acquire('c3', 10);
    expect(now() - t0).toBeGreaterThanOrEqual(1_000);
  });

  test('a 429 holds the whole fleet off until its retry-after', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 600_000 });
    const blocked = await a.penalize(1_200);
    expect(blocked).toBeGreaterThan(1_100);
    const g = await b.tryAcquire('after-429', 10, { arrivedMs: now() });
    expect(g.granted === false && g.waitMs).toBeGreaterThan(1_000);
    const t0 = now();
    await b.acquire('after-429', 10);
    expect(now() - t0).toBeGreaterThanOrEqual(1_000);
  });

  test('a waiter that stops asking leaves the queue, and an aborted wait leaves it at once', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 60_000, waiterTtlMs: 600 });
    expect((await a.tryAcquire('fill', 60_000, { arrivedMs: now() })).granted).toBe(true);
    expect(await a.tryAcquire('gone', 500, { arrivedMs: now() })).toMatchObject({ granted: false, position: 0 }); // then never asks again
    expect(await b.tryAcquire('next', 2_000, { arrivedMs: now() })).toMatchObject({ granted: false, position: 1 });
    await new Promise((r) => setTimeout(r, 700));
    expect(await b.tryAcquire('next', 2_000, { arrivedMs: now() })).toMatchObject({ granted: false, position: 0 });

    const ac = new AbortController();
    const waiting = b.acquire('next', 30_000, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('paused')), 100);
    await expect(waiting).rejects.toThrow('paused');
    // Only the head is ever granted, and the bucket has refilled past 100: 'next' is gone from the queue.
    expect(await a.tryAcquire('third', 100, { arrivedMs: now() })).toMatchObject({ granted: true });
  });

  test('a bounded wait gives up with the last answer and keeps its place for as long as it says', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 60_000, waiterTtlMs: 500 });
    expect((await a.tryAcquire('fill', 60_000, { arrivedMs: now() })).granted).toBe(true);
    const arrivedMs = now();
    const t0 = now();
    const g = await a.acquire('long', 10_000, { arrivedMs, untilMs: now() + 300, keepPlaceMs: 2_000 });
    expect(g).toMatchObject({ granted: false, position: 0 });
    expect(now() - t0).toBeLessThan(1_000);
    await new Promise((r) => setTimeout(r, 1_000)); // past the waiter ttl, within keepPlaceMs
    expect(await b.tryAcquire('later', 10, { arrivedMs: now() })).toMatchObject({ granted: false, position: 1 });
    expect(await a.tryAcquire('long', 10_000, { arrivedMs })).toMatchObject({ granted: false, position: 0 });
  });

  test('bad limits are refused with the setting named', async () => {
    await expect(fleet(1, { tokensPerMinute: -5 })).rejects.toThrow(/tokensPerMinute must be a number ≥ 0, got -5/);
  });
});
