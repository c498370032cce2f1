/**
 * Tenants on the task queue, on the real dev server (started with `matching.enableFairness`, as every server of the
 * project is): a run's start, its model calls and its child runs carry its tenant's fairness key to the server, and
 * the server dispatches a tenant's task ahead of another tenant's backlog instead of behind it; a run's priority orders
 * the queue before that, and a tenant past its burst starts its runs in the background.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { defineAgent } from '../src/activities';
import { AgentClient, type AgentRunInput } from '../src/client';
import { backgroundTaskQueue, FAIRNESS_KEY_MAX_BYTES, fairnessKeyOf } from '../src/common/fairness';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
let agents: AgentClient;
/** Model calls held until the test lets them answer. */
const held: Array<() => void> = [];
const hold = () => new Promise<void>((resolve) => held.push(resolve));
const releaseAll = () => held.splice(0).forEach((release) => release());
/** Lets the held model calls answer once `n` of them have reached the model. */
const release = async (n = 1) => {
  await waitFor(() => (held.length >= n ? true : undefined), 20_000, `${n} held model calls`);
  releaseAll();
};

beforeAll(async () => {
  const helper = defineAgent({ name: 'helper', description: 'Looks one thing up.', instructions: 'You look one thing up.', model: 'fair-helper', tools: [] });
  h = await startAgentHarness(undefined, { agents: [helper] });
  agents = new AgentClient(h.env.client, h.taskQueue);
  h.model.register('fair-boss', async ({ callIndex }) => {
    if (callIndex > 0) return { text: 'done' };
    await hold();
    return { toolCalls: [{ id: 'c0', name: 'helper', arguments: { prompt: 'look' } }] };
  });
  h.model.register('fair-helper', async () => {
    await hold();
    return { text: 'looked it up' };
  });
  h.model.register('fair-plain', async () => {
    await hold();
    return { text: 'plain' };
  });
}, 120_000);

afterAll(async () => {
  releaseAll();
  await h?.close();
});

/** What the server holds of a run: its own priority and task queue, and its pending activities' and children's. */
async function described(workflowId: string) {
  const { raw, taskQueue } = await h.env.client.workflow.getHandle(workflowId).describe();
  return {
    taskQueue,
    key: raw.workflowExecutionInfo?.priority?.fairnessKey ?? '',
    priorityKey: raw.workflowExecutionInfo?.priority?.priorityKey ?? 0,
    activities: (raw.pendingActivities ?? []).map((a) => ({ type: a.activityType?.name, key: a.priority?.fairnessKey ?? '', priorityKey: a.priority?.priorityKey ?? 0 })),
    children: (raw.pendingChildren ?? []).map((c) => c.workflowId!),
  };
}

const pendingActivity = (workflowId: string) =>
  waitFor(async () => {
    const d = await described(workflowId);
    return d.activities.length > 0 ? d : undefined;
  }, 20_000, `a pending activity of ${workflowId}`);

test("a run's start, its model call and its child run (and the child's model call) carry its tenant's fairness key", async () => {
  const handle = await agents.start({ prompt: 'delegate', model: 'fair-boss', tools: ['helper'], priority: 7 }, { owner: { tenant: 'acme', startedBy: 'alice' } });
  const parent = await pendingActivity(handle.workflowId);
  expect(parent).toMatchObject({ key: 'acme', activities: [{ type: 'callModel', key: 'acme' }] });
  await release();

  const childId = await waitFor(async () => (await described(handle.workflowId)).children[0], 20_000, 'the child run');
  const child = await pendingActivity(childId);
  expect(child).toMatchObject({ key: 'acme', activities: [{ type: 'callModel', key: 'acme' }] });
  // The child also draws on the fleet's budget as the tenant, at its parent's priority: its input names both.
  const history = await h.env.client.workflow.getHandle(childId).fetchHistory();
  const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
  expect(defaultPayloadConverter.fromPayload(started.input!.payloads![0]!)).toMatchObject({ agent: 'helper', tenant: 'acme', priority: 7 });
  await release();
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED', answer: 'done' });
}, 60_000);

test('a run started without a priority (another client) still schedules its model call under the tenant of its input', async () => {
  const handle = await h.start({ prompt: 'hello', model: 'fair-plain', tenant: 'beta' });
  const d = await pendingActivity(handle.workflowId);
  expect(d).toMatchObject({ key: '', activities: [{ type: 'callModel', key: 'beta' }] });
  await release();
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED' });
}, 60_000);

test('a tenant longer than a fairness key may be (64 bytes) gets a key of its first bytes and a hash of it all', async () => {
  const long = (end: string) => `${'ü'.repeat(40)}${end}`;
  const [a, b] = [fairnessKeyOf(long('a')), fairnessKeyOf(long('b'))];
  expect(a).not.toBe(b);
  expect(Buffer.byteLength(a)).toBeLessThanOrEqual(FAIRNESS_KEY_MAX_BYTES);
  expect(a.startsWith('ü'.repeat(27))).toBe(true);
  expect(fairnessKeyOf('acme')).toBe('acme');
  // The server takes the start (it refuses a key over 64 bytes) and holds the key.
  const handle = await agents.start({ prompt: 'hello', model: 'fair-plain' }, { owner: { tenant: long('a'), startedBy: null } });
  expect((await pendingActivity(handle.workflowId)).activities).toEqual([{ type: 'callModel', key: a, priorityKey: 0 }]);
  await release();
  expect(await handle.result()).toMatchObject({ status: 'COMPLETED' });
}, 60_000);

test("a tenant past its burst starts its further runs in the background: priority 8 in the budget, Temporal's last priority key", async () => {
  const bursty = new AgentClient(h.env.client, h.taskQueue, undefined, undefined, { tenantBurst: { runs: 1 } });
  const first = await bursty.start({ prompt: 'first', model: 'fair-plain' }, { owner: { tenant: 'bursty', startedBy: null } });
  expect(await pendingActivity(first.workflowId)).toMatchObject({ key: 'bursty', priorityKey: 0, activities: [{ type: 'callModel', key: 'bursty', priorityKey: 0 }] });
  const second = await bursty.start({ prompt: 'second', model: 'fair-plain' }, { owner: { tenant: 'bursty', startedBy: null } });
  // No worker polls the fleet's background queue here (the harness's polls one queue): it stays on the fleet's.
  expect((await pendingActivity(second.workflowId)).taskQueue).toBe(h.taskQueue);
  // Its model call sets no priority key of its own: the server dispatches it at the run's (it merges the two when it
  // queues the task, `priorities.Merge`), and it draws on the budget at the run's priority.
  expect(await pendingActivity(second.workflowId)).toMatchObject({ key: 'bursty', priorityKey: 5, activities: [{ type: 'callModel', key: 'bursty', priorityKey: 0 }] });
  const started = (await h.env.client.workflow.getHandle(second.workflowId).fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
  expect(defaultPayloadConverter.fromPayload(started.input!.payloads![0]!)).toMatchObject({ tenant: 'bursty', priority: 8 });
  // Another tenant is within its own burst.
  const other = await bursty.start({ prompt: 'other', model: 'fair-plain' }, { owner: { tenant: 'other', startedBy: null } });
  expect(await pendingActivity(other.workflowId)).toMatchObject({ priorityKey: 0 });
  await release(3);
  expect((await Promise.all([first, second, other].map((r) => r.result()))).map((r) => r.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
}, 60_000);

test("with a worker polling the fleet's background task queue, a run past its burst starts there, and its model call runs there", async () => {
  // A second worker of the same code, as `createAgentWorker` runs beside its own: few slots, the background queue.
  const background = await Worker.create({
    connection: h.env.nativeConnection,
    taskQueue: backgroundTaskQueue(h.taskQueue),
    workflowBundle: h.bundle,
    dataConverter: h.dataConverter,
    ...agentWorkerOptions({ openai: openAIClient({ baseURL: h.model.url, apiKey: 'scripted' }), defaultModel: 'unset', workspace: os.tmpdir() }),
    maxConcurrentWorkflowTaskExecutions: 2,
    identity: 'background-worker',
  });
  const polling = background.run();
  try {
    // The server lists the worker once it has polled.
    await waitFor(async () => {
      const d = await h.env.client.workflowService.describeTaskQueue({ namespace: h.env.client.options.namespace, taskQueue: { name: backgroundTaskQueue(h.taskQueue) }, taskQueueType: 1 });
      return (d.pollers ?? []).length > 0 || undefined;
    }, 20_000, 'a poller of the background queue');
    const bursty = new AgentClient(h.env.client, h.taskQueue, undefined, undefined, { tenantBurst: { runs: 1 } });
    const first = await bursty.start({ prompt: 'first', model: 'fair-plain' }, { owner: { tenant: 'batch', startedBy: null } });
    const second = await bursty.start({ prompt: 'second', model: 'fair-plain' }, { owner: { tenant: 'batch', startedBy: null } });
    // So is a run that asks for the background itself; one of a better priority is not.
    const asked = await bursty.start({ prompt: 'asked', model: 'fair-plain', priority: 9 });
    const urgent = await bursty.start({ prompt: 'urgent', model: 'fair-plain', priority: 7 });
    const queues = await Promise.all([first, second, asked, urgent].map(async (r) => (await pendingActivity(r.workflowId)).taskQueue));
    expect(queues).toEqual([h.taskQueue, backgroundTaskQueue(h.taskQueue), backgroundTaskQueue(h.taskQueue), h.taskQueue]);
    // The model call was dispatched to, and is held by, the worker of the background queue.
    expect(await pendingActivity(second.workflowId)).toMatchObject({ priorityKey: 5, activities: [{ type: 'callModel', key: 'batch' }] });
    await release(4);
    expect((await Promise.all([first, second, asked, urgent].map((r) => r.result()))).map((r) => r.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
    const ran = await Promise.all([second, asked].map(async (r) => (await h.env.client.workflow.getHandle(r.workflowId).fetchHistory()).events!.find((e) => e.activityTaskStartedEventAttributes)!.activityTaskStartedEventAttributes!.identity));
    expect(ran).toEqual(['background-worker', 'background-worker']);
  } finally {
    background.shutdown();
    await polling;
  }
}, 90_000);

/**
 * Starts `batch`, then `late`, on a task queue no worker polls (every start waits in its backlog) with no tenant burst,
 * then polls its workflow tasks one at a time until `late`'s is taken: `late`'s place among them (0 first).
 */
async function placeBehind(batch: AgentRunInput[], late: AgentRunInput): Promise<number> {
  const taskQueue = `order-${randomUUID()}`;
  const queue = new AgentClient(h.env.client, taskQueue, undefined, undefined, { tenantBurst: false });
  const ahead = await Promise.all(batch.map((input) => queue.start(input)));
  const last = await queue.start(late);
  const { workflowService, connection } = h.env.client;
  const order: string[] = [];
  try {
    while (order.length <= batch.length && !order.includes(last.workflowId)) {
      const poll = () => workflowService.pollWorkflowTaskQueue({ namespace: h.env.client.options.namespace, taskQueue: { name: taskQueue }, identity: 'fairness-test' });
      const task = await connection.withDeadline(Date.now() + 10_000, poll);
      if (task.workflowExecution?.workflowId) order.push(task.workflowExecution.workflowId);
    }
    return order.indexOf(last.workflowId);
  } finally {
    await Promise.all([...ahead, last].map((r) => h.env.client.workflow.getHandle(r.workflowId).terminate('test over').catch(() => undefined)));
  }
}

test("a run's priority orders the task queue before fairness: one of the default priority started behind 40 of the background's goes first", async () => {
  // One tenant for all: fairness alone would keep arrival order within it.
  const place = await placeBehind(Array.from({ length: 40 }, (_, i) => ({ prompt: `batch ${i}`, tenant: 'one', priority: 9 })), { prompt: 'urgent', tenant: 'one' });
  // In arrival order it comes 41st; by priority right after the task the queue had at hand.
  expect(place).toBeGreaterThanOrEqual(0);
  expect(place).toBeLessThan(3);
}, 120_000);

test("a run of one tenant started behind another's 80 is dispatched among the first workflow tasks, not after them", async () => {
  // No burst: the flood's runs keep the default priority, so only fairness can put the late run ahead.
  const place = await placeBehind(Array.from({ length: 80 }, (_, i) => ({ prompt: `flood ${i}`, tenant: 'flood' })), { prompt: 'late', tenant: 'late' });
  // In arrival order it comes 81st; in fair order right after the task the queue had at hand (measured: 2nd, six of six).
  expect(place).toBeGreaterThanOrEqual(0);
  expect(place).toBeLessThan(5);
}, 120_000);
