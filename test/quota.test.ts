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
    const low = a.acquire('low', 1, { priority: 7 }).then(() => order.push('low'));
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

  test('a grant handed to another activity holds its slot for its own short lease, and the whole lease once held', async () => {
    const [a, b] = await fleet(2, { maxConcurrent: 1, leaseMs: 60_000 });
    // Handed off and never taken over (its run stopped in between): the slot frees after the hand-off's lease.
    expect((await a.tryAcquire('h1', 10, { arrivedMs: now(), leaseMs: 300 })).granted).toBe(true);
    expect(await b.tryAcquire('h2', 10, { arrivedMs: now() })).toMatchObject({ granted: false });
    await new Promise((r) => setTimeout(r, 400));
    expect((await b.tryAcquire('h2', 10, { arrivedMs: now(), leaseMs: 300 })).granted).toBe(true);
    // Taken over by the call (`hold`): the budget's whole lease, until it settles.
    await b.hold('h2');
    await new Promise((r) => setTimeout(r, 400));
    expect(await a.tryAcquire('h3', 10, { arrivedMs: now() })).toMatchObject({ granted: false });
    await b.settle('h2', 10, 10);
    expect((await a.tryAcquire('h3', 10, { arrivedMs: now() })).granted).toBe(true);
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

  /**
   * One slot (`maxConcurrent: 1`) served in turn: every waiter asks, in its queue's order, until one is granted, which
   * settles at once. Returns the tenants of the calls granted, in order.
   */
  async function serve(budget: RedisBudget, waiters: Array<{ id: string; tenant?: string; arrivedMs: number; tokens?: number }>, grants: number): Promise<string[]> {
    // Every waiter in its queue first, while the slot is taken.
    const fill = await budget.tryAcquire(`fill-${randomUUID()}`, 1, { arrivedMs: 0, priority: 0 });
    for (const w of waiters) expect((await budget.tryAcquire(w.id, w.tokens ?? 10, { tenant: w.tenant, arrivedMs: w.arrivedMs })).granted).toBe(false);
    if (fill.granted) await budget.settle(fill.lease, fill.tokens, fill.tokens);
    const served: string[] = [];
    while (served.length < grants && waiters.length > 0) {
      for (const w of waiters) {
        const g = await budget.tryAcquire(w.id, w.tokens ?? 10, { tenant: w.tenant, arrivedMs: w.arrivedMs });
        if (!g.granted) continue;
        served.push(w.tenant ?? 'default');
        waiters.splice(waiters.indexOf(w), 1);
        await budget.settle(g.lease, g.tokens, g.tokens);
        break;
      }
    }
    return served;
  }
  const calls = (tenant: string | undefined, n: number, t0: number) => Array.from({ length: n }, (_, i) => ({ id: `${tenant ?? 'none'}-${i}`, tenant, arrivedMs: t0 + i }));

  test('fair share: with tenant A flooding the queue, tenant B, come later, is served every other call', async () => {
    const [a, b] = await fleet(2, { maxConcurrent: 1 });
    const flood = calls('A', 40, now());
    // A is served alone a while: B then starts from where the budget is, with no credit for the time it was away.
    expect(await serve(a, flood, 6)).toEqual(Array(6).fill('A'));
    const late = calls('B', 5, now());
    const served = await serve(b, [...flood, ...late], 12);
    expect(served.slice(0, 10).filter((t) => t === 'B')).toHaveLength(5);
    expect(served.slice(0, 10).join(' ')).toMatch(/^(B A|A B)( (B A|A B)){4}$/);
    expect(served.slice(10)).toEqual(['A', 'A']);
  });

  test("runs without a tenant share one default tenant; a tenant's weight is its share", async () => {
    const [a] = await fleet(1, { maxConcurrent: 1, tenantWeights: { heavy: 3 } });
    const t0 = now();
    const served = await serve(a, [...calls(undefined, 20, t0), ...calls('heavy', 20, t0 + 100)], 16);
    // The default tenant (every run without one) against a tenant of weight 3: one call in four.
    expect(served.filter((t) => t === 'default').length).toBeGreaterThanOrEqual(3);
    expect(served.filter((t) => t === 'default').length).toBeLessThanOrEqual(5);
    expect(served.slice(0, 8).filter((t) => t === 'heavy').length).toBeGreaterThanOrEqual(5);
  });

  test('fair share counts tokens: a tenant of small calls is not held behind a flood of large ones', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 60_000 }); // 1,000 a second
    expect((await a.tryAcquire('fill', 60_000, { tenant: 'batch', arrivedMs: now() })).granted).toBe(true);
    // The batch tenant queues calls of 2,000 tokens; the interactive one asks for 100 after them.
    const t0 = now();
    const stop = new AbortController();
    const batch = Array.from({ length: 5 }, (_, i) => a.acquire(`batch-${i}`, 2_000, { tenant: 'batch', arrivedMs: t0 + i, signal: stop.signal }).catch(() => undefined));
    await new Promise((r) => setTimeout(r, 50));
    const small = await b.acquire('small', 100, { tenant: 'interactive' }).then(() => now() - t0);
    // One queue would grant it after the batch's 10,000 tokens (10 s); its share gets it after the batch's first.
    expect(small).toBeLessThan(3_000);
    stop.abort(new Error('test over'));
    await Promise.all(batch);
  });

  test('the background (priority 8 and 9) leaves a fifth of the tokens to better priorities, which start at once', async () => {
    const [a, b] = await fleet(2, { tokensPerMinute: 60_000 }); // 1,000 a second
    // A background call cannot draw the bucket below its reserve: the most it is granted is 48,000 of 60,000.
    expect(await a.tryAcquire('bg-huge', 100_000, { priority: 8, tenant: 'batch', arrivedMs: now() })).toMatchObject({ granted: true, tokens: 48_000 });
    const t0 = now();
    // About 12,000 left, all of it the reserve: the next background call waits for the refill above it ...
    const bg = await a.tryAcquire('bg-next', 2_000, { priority: 9, tenant: 'batch', arrivedMs: now() });
    expect(bg).toMatchObject({ granted: false });
    expect(bg.granted === false && bg.waitMs).toBeGreaterThan(1_500);
    // ... while another tenant's call of the default priority is granted from the reserve at once.
    expect(await b.tryAcquire('interactive', 5_000, { tenant: 'interactive', arrivedMs: now() })).toMatchObject({ granted: true, tokens: 5_000 });
    expect(now() - t0).toBeLessThan(1_000);
    // With nothing better waiting, the refill above the reserve still goes to the background.
    await a.leave('bg-next');
    expect((await a.acquire('bg-later', 1_000, { priority: 8, tenant: 'batch' })).granted).toBe(true);
  });

  test('the background leaves concurrent slots too, and with no reserve it takes them all', async () => {
    const [reserved] = await fleet(1, { maxConcurrent: 5 });
    for (let i = 0; i < 4; i++) expect((await reserved.tryAcquire(`bg-${i}`, 1, { priority: 8, arrivedMs: now() })).granted).toBe(true);
    expect((await reserved.tryAcquire('bg-4', 1, { priority: 8, arrivedMs: now() })).granted).toBe(false);
    await reserved.leave('bg-4');
    expect((await reserved.tryAcquire('normal', 1, { arrivedMs: now() })).granted).toBe(true);
    const [none] = await fleet(1, { maxConcurrent: 5, backgroundReserve: 0 });
    for (let i = 0; i < 5; i++) expect((await none.tryAcquire(`bg-${i}`, 1, { priority: 9, arrivedMs: now() })).granted).toBe(true);
  });

  test('backgroundReserve must be a share below 1', async () => {
    await expect(fleet(1, { maxConcurrent: 1, backgroundReserve: 1 })).rejects.toThrow(/backgroundReserve must be a share ≥ 0 and < 1, got 1/);
  });

  test('tenantWeights must be positive', async () => {
    await expect(RedisBudget.connect({ url: redis.url, name: 'w', maxConcurrent: 1, tenantWeights: { a: 0 } })).rejects.toThrow('tenantWeights.a must be a number > 0');
  });

  test('bad limits are refused with the setting named', async () => {
    await expect(fleet(1, { tokensPerMinute: -5 })).rejects.toThrow(/tokensPerMinute must be a number ≥ 0, got -5/);
  });
});
