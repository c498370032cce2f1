/**
 * Runs under the fleet's provider budget, on the real dev server and a real redis-server: a call with no room waits
 * in its state (shown as quotaWait), a pause reaches it at once, and a batch of runs sharing a provider's quota gets
 * no 429 with the budget where it gets them without.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { RedisBudget } from '../src/quota';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { freePort, startRedis } from './support/redis';

let redis: ChildProcess;
let url: string;

beforeAll(async () => {
  const port = await freePort();
  redis = await startRedis(port);
  url = `redis://127.0.0.1:${port}`;
});
afterAll(() => redis?.kill('SIGKILL'));

/** A worker under a fresh budget, and a second connection to that budget: another worker of the fleet. */
async function budgetAndHarness(limits: { tokensPerMinute: number; maxConcurrent?: number }) {
  const name = `test-${randomUUID()}`;
  const budget = await RedisBudget.connect({ url, name, ...limits });
  const h = await startAgentHarness(undefined, { budget });
  return { budget, h, other: await RedisBudget.connect({ url, name, ...limits }) };
}

describe('a run under the fleet budget', () => {
  let h: AgentHarness | undefined;
  let budgets: RedisBudget[] = [];
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await Promise.all(budgets.map((b) => b.close()));
    budgets = [];
  });

  test('waits in its state with the expected wait, pauses at once, and resumes to one request', async () => {
    const setup = await budgetAndHarness({ tokensPerMinute: 6_000 });
    const run = setup.h;
    h = run;
    budgets = [setup.budget, setup.other];
    // Another worker's call has the whole minute: 100 tokens a second come back.
    expect((await setup.other.tryAcquire('someone-else', 6_000, { arrivedMs: Date.now() })).granted).toBe(true);
    run.model.register('waits', [{ text: 'finally' }]);
    const client = new AgentClient(run.env.client, run.taskQueue);
    const handle = await run.start({ prompt: 'hello', model: 'waits' });
    const waiting = await run.waitForState(handle, (s) => s.quotaWait !== null, 15_000);
    expect(waiting.state).toBe('STREAMING');
    expect(waiting.quotaWait).toMatchObject({ position: 0 });
    expect(Date.parse(waiting.quotaWait!.expectedAt)).toBeGreaterThan(Date.now());
    expect(run.model.requests('waits')).toHaveLength(0);
    let out = '';
    await runCli(['state', handle.workflowId], { connect: async () => client, out: (t) => (out += t), err: (t) => (out += t) });
    expect(out).toMatch(/waiting for quota since \S+: room expected at \S+, 0 calls ahead/);

    const t0 = Date.now();
    await client.handle(handle.workflowId).pause();
    const paused = await run.waitForState(handle, (s) => s.state === 'PAUSED', 10_000);
    expect(Date.now() - t0).toBeLessThan(5_000); // not at the end of the wait
    expect([paused.resumeTo, paused.loops, paused.quotaWait]).toEqual(['STREAMING', 0, null]);

    await client.handle(handle.workflowId).resume();
    const result = await client.handle(handle.workflowId).result();
    expect([result.status, result.answer, result.loops]).toEqual(['COMPLETED', 'finally', 1]);
    expect(run.model.requests('waits')).toHaveLength(1);
  });

  test('a call still waiting after its first wait waits in awaitQuota, of a 30 s heartbeat timeout, and hands its grant to the call', async () => {
    const setup = await budgetAndHarness({ tokensPerMinute: 6_000, maxConcurrent: 1 });
    h = setup.h;
    budgets = [setup.budget, setup.other];
    // Another worker's call drew the whole minute and ended: its slot is free, 100 tokens a second come back.
    expect((await setup.other.tryAcquire('someone-else', 6_000, { arrivedMs: Date.now() })).granted).toBe(true);
    await setup.other.settle('someone-else', 6_000, 6_000);
    setup.h.model.register('waits-apart', [{ text: 'at last' }]);
    const handle = await setup.h.start({ prompt: 'hello', model: 'waits-apart' });
    const result = await handle.result();
    expect([result.status, result.answer]).toEqual(['COMPLETED', 'at last']);
    expect(setup.h.model.requests('waits-apart')).toHaveLength(1);

    const scheduled = ((await handle.fetchHistory()).events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : []));
    expect(scheduled.map((a) => a.activityType?.name)).toEqual(['callModel', 'awaitQuota', 'callModel']);
    expect(Number(scheduled[1].heartbeatTimeout?.seconds)).toBe(30);
    expect(Number(scheduled[2].heartbeatTimeout?.seconds)).toBe(5);
    const input = (a: (typeof scheduled)[number]) => JSON.parse(Buffer.from(a.input!.payloads![0].data!).toString()) as { callNumber: number; quota?: { queuedAt?: number; grant?: { lease: string; tokens: number } } };
    const [first, wait, call] = scheduled.map(input);
    expect(first.quota?.grant).toBeUndefined();
    expect(wait.quota).toMatchObject({ queuedAt: expect.any(Number) });
    expect(call.quota).toMatchObject({ queuedAt: wait.quota!.queuedAt, grant: { lease: `${handle.workflowId}:${first.callNumber}`, tokens: expect.any(Number) } });
    // The call settled the grant it took over: the one slot is free again.
    expect((await setup.other.tryAcquire('after', 1, { arrivedMs: Date.now() })).granted).toBe(true);
  }, 60_000);

  test('runs sharing a provider quota: none answered 429 with the budget, where they are without it', async () => {
    // Each call uses 510 tokens and reserves a little more (its estimate): a 1,500-token minute fits two at once.
    const batch = async (budget: RedisBudget | undefined) => {
      const harness = await startAgentHarness(undefined, { budget, modelOptions: { tokensPerMinute: 1_500 } });
      h = harness;
      harness.model.register('shared', () => ({ text: 'ok', usage: { prompt_tokens: 500, completion_tokens: 10 } }));
      const handles = await Promise.all(Array.from({ length: 4 }, (_, i) => harness.start({ prompt: `run ${i}`, model: 'shared' })));
      const waits = await Promise.all(handles.map((x) => harness.waitForState(x, (s) => s.quotaWait !== null || s.state === 'COMPLETED', 30_000)));
      const results = await Promise.all(handles.map((x) => x.result()));
      const rateLimited = harness.model.requests('shared').filter((r) => r.rateLimited).length;
      await harness.close();
      h = undefined;
      return { results, rateLimited, waited: waits.filter((w) => w.quotaWait !== null).length };
    };
    const budget = await RedisBudget.connect({ url, name: `test-${randomUUID()}`, tokensPerMinute: 1_500 });
    budgets = [budget];
    const budgeted = await batch(budget);
    expect(budgeted.results.map((r) => r.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
    expect(budgeted.rateLimited).toBe(0);
    expect(budgeted.waited).toBeGreaterThan(0);
    const unbudgeted = await batch(undefined);
    expect(unbudgeted.results.map((r) => r.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
    expect(unbudgeted.rateLimited).toBeGreaterThan(0);
  }, 240_000);
});
