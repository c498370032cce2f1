/** Sub-agent patterns on the real dev server: child agentRun workflows, progress, abort and failure. */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { temporalPriorityKey } from '../src/common/fairness';
import { abortSignal, stateQuery, type AgentRunResult } from '../src/common/messages';
import { buildGateway } from '../src/gateway/index';
import {
  type AgentPipelineInput,
  type AgentPipelineResult,
  patternStateQuery,
  type PlanExecuteInput,
  type PlanExecuteResult,
} from '../src/common/pattern-messages';
import { parseSteps } from '../src/workflows/patterns/prompts';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';
import { streamSinks } from '../src/stream/sinks';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const userPrompt = (request: any): string => request.messages.find((m: any) => m.role === 'user').content;

function start<T>(type: 'planExecute' | 'agentPipeline', input: PlanExecuteInput | AgentPipelineInput | Record<string, unknown>): Promise<WorkflowHandle> {
  return h.env.client.workflow.start<(input: unknown) => Promise<T>>(type, { taskQueue: h.taskQueue, workflowId: `${type}-${randomUUID()}`, args: [input] });
}


/** Each child id is described as a child of `parentId`. */
async function expectChildrenOf(parentId: string, names: string[]): Promise<void> {
  for (const name of names) {
    const description = await h.env.client.workflow.getHandle(`${parentId}/${name}`).describe();
    expect(description.type).toBe('agentRun');
    expect(description.parentExecution?.workflowId).toBe(parentId);
  }
}

/** Waits until the pattern runs `stage` and that child's model has streamed some text. */
async function waitUntilStreaming(handle: WorkflowHandle, stage: string): Promise<WorkflowHandle> {
  await waitFor(async () => ((await handle.query(patternStateQuery)).stage === stage ? true : undefined), 20_000, `stage ${stage}`);
  const child = h.env.client.workflow.getHandle(`${handle.workflowId}/${stage}`);
  await h.waitForState(child, (s) => s.partialText.length > 0);
  return child;
}

describe('parseSteps', () => {
  test.each([
    ['1. a\n2. b', ['a', 'b']],
    ['Plan:\n1) fetch\n   - detail\n2) **sum**\n\nDone.', ['fetch', 'sum']],
    ['Step 1: x\nStep 2: y', ['x', 'y']],
    ['- one\n* two\n• three', ['one', 'two', 'three']],
    ['1. a\n2. b\n3. c\n4. d', ['a', 'b', 'c']],
    ['just do it', ['just do it']],
    ['  ', ['the task']],
  ])('%j', (answer, steps) => {
    expect(parseSteps(answer, 3, 'the task')).toEqual(steps);
  });
});

describe('planExecute', () => {
  test('plans, runs one child per step with the earlier results, and synthesises', async () => {
    h.model.register('pe', ({ request }) => {
      const prompt = userPrompt(request);
      if (prompt.startsWith('You are the planner')) return { text: '1. a\n2. b' };
      const step = /^Your step \(\d+ of \d+\): (.+)$/m.exec(prompt)?.[1];
      if (step) return { text: `did ${step}` };
      if (prompt.startsWith('You are the synthesiser')) return { text: `final: ${[...prompt.matchAll(/^did .+$/gm)].join('; ')}` };
      throw new Error(`unexpected prompt: ${prompt}`);
    });
    const handle = await start<PlanExecuteResult>('planExecute', { task: 'Do a then b', model: 'pe', maxSteps: 3 });
    const id = handle.workflowId;
    const result: PlanExecuteResult = await handle.result();

    expect(result).toEqual({
      status: 'COMPLETED',
      answer: 'final: did a; did b',
      plan: ['a', 'b'],
      steps: [
        { step: 'a', workflowId: `${id}/step-1`, status: 'COMPLETED', answer: 'did a' },
        { step: 'b', workflowId: `${id}/step-2`, status: 'COMPLETED', answer: 'did b' },
      ],
      reason: null,
    });
    const requests = h.model.requests('pe');
    expect(requests).toHaveLength(4);
    expect(requests[0].body.tools).toBeUndefined(); // the planner gets no tools
    expect(userPrompt(requests[0].body)).toMatch(/at most 3 concrete steps/);
    const second = userPrompt(requests[2].body);
    expect(second).toContain('Task:\nDo a then b');
    expect(second).toContain('Plan:\n1. a\n2. b');
    expect(second).toContain('Step 1 (a):\ndid a');

    await expectChildrenOf(id, ['planner', 'step-1', 'step-2', 'synthesiser']);
    const state = await handle.query(patternStateQuery);
    expect(state).toMatchObject({ pattern: 'planExecute', status: 'COMPLETED', stage: null });
    expect(state.children.map((c) => [c.name, c.status])).toEqual([
      ['planner', 'COMPLETED'], ['step-1', 'COMPLETED'], ['step-2', 'COMPLETED'], ['synthesiser', 'COMPLETED'],
    ]);
    expect((await handle.describe()).searchAttributes.AgentState).toEqual(['COMPLETED']);
    // The children are listed under the parent too (visibility is eventually consistent).
    const listed = await waitFor(async () => {
      const ids: string[] = [];
      for await (const w of h.env.client.workflow.list({ query: `ParentWorkflowId = "${id}"` })) ids.push(w.workflowId);
      return ids.length === 4 ? ids.sort() : undefined;
    }, 10_000, 'the children in visibility');
    expect(listed).toEqual([`${id}/planner`, `${id}/step-1`, `${id}/step-2`, `${id}/synthesiser`].sort());

    const history = await handle.fetchHistory();
    await expect(Worker.runReplayHistory({ workflowBundle: h.bundle, sinks: streamSinks(undefined) }, history, id)).resolves.toBeUndefined();
  });

  test('abort cancels the running child and ends ABORTED without a throw', async () => {
    h.model.register('pe-slow', ({ request }) =>
      userPrompt(request).startsWith('You are the planner')
        ? { text: '1. slow\n2. never' }
        : { text: 'x'.repeat(2_000), chunkSize: 2, chunkDelayMs: 100 },
    );
    const handle = await start<PlanExecuteResult>('planExecute', { task: 'Take your time', model: 'pe-slow' });
    const child = await waitUntilStreaming(handle, 'step-1');
    expect((await handle.describe()).searchAttributes.AgentState).toEqual(['RUNNING_CHILDREN']);

    await handle.signal(abortSignal, { reason: 'enough' });
    const result: PlanExecuteResult = await handle.result();
    expect(result).toEqual({
      status: 'ABORTED',
      answer: null,
      plan: ['slow', 'never'],
      steps: [{ step: 'slow', workflowId: child.workflowId, status: 'ABORTED', answer: null }],
      reason: 'aborted: enough',
    });
    const childResult: AgentRunResult = await child.result();
    expect(childResult.status).toBe('ABORTED');
    expect((await child.query(stateQuery)).state).toBe('ABORTED');
    // The child's 200-second stream was cut, not waited for: closed by the client before it completed.
    const cut = await waitFor(() => h.model.requests('pe-slow').find((r) => r.closedByClient), 5_000, 'the child stream to close');
    expect(cut.completed).toBe(false);
    expect(h.model.requests('pe-slow')).toHaveLength(2); // no step 2, no synthesiser
    expect((await handle.describe()).searchAttributes.AgentState).toEqual(['ABORTED']);
  });

  test('a failed child fails the pattern naming the stage', async () => {
    h.model.register('pe-denied', [{ error: { status: 401, message: 'bad key' } }]);
    const handle = await start('planExecute', { task: 'Plan something', model: 'pe-denied' });
    const failure = await failureOf(handle.result());
    expect(failure.type).toBe('SubAgentFailed');
    expect(failure.message).toContain(`planExecute planner (${handle.workflowId}/planner) failed:`);
    expect(failure.message).toContain('bad key');
    expect((await handle.query(patternStateQuery)).children).toEqual([{ name: 'planner', workflowId: `${handle.workflowId}/planner`, status: 'FAILED' }]);
    expect((await handle.describe()).searchAttributes.AgentState).toEqual(['FAILED']);
  });

  test('bad input fails at once with InvalidInput naming the fields', async () => {
    const failure = await failureOf(start('planExecute', { task: ' ', maxSteps: 0 }).then((hd) => hd.result()));
    expect(failure.type).toBe('InvalidInput');
    expect(failure.message).toMatch(/^Invalid planExecute input: task: .*; maxSteps: /);
  });
});

describe('agentPipeline', () => {
  test('runs designer, coder, reviewer, each given the previous output', async () => {
    h.model.register('pipe', ({ request }) => ({ text: `${/^You are the (\S+) stage/.exec(userPrompt(request))?.[1]}-output` }));
    const handle = await start<AgentPipelineResult>('agentPipeline', { task: 'Write fizzbuzz', model: 'pipe' });
    const id = handle.workflowId;
    const result: AgentPipelineResult = await handle.result();

    expect(result).toEqual({
      status: 'COMPLETED',
      answer: 'reviewer-output',
      stages: ['designer', 'coder', 'reviewer'].map((name) => ({ name, workflowId: `${id}/${name}`, status: 'COMPLETED', answer: `${name}-output` })),
      reason: null,
    });
    const prompts = h.model.requests('pipe').map((r) => userPrompt(r.body));
    expect(prompts[0]).toContain('Task:\nWrite fizzbuzz');
    expect(prompts[0]).not.toContain('Output of the previous stage');
    expect(prompts[1]).toContain('Output of the previous stage (designer):\ndesigner-output');
    expect(prompts[2]).toContain('Output of the previous stage (coder):\ncoder-output');
    await expectChildrenOf(id, ['designer', 'coder', 'reviewer']);
    expect((await handle.describe()).searchAttributes.AgentState).toEqual(['COMPLETED']);
  });

  test('the client, CLI and gateway abort a pattern, which has no abort update, with the signal it handles', async () => {
    h.model.register('pe-slow-controls', ({ request }) =>
      userPrompt(request).startsWith('You are the planner') ? { text: '1. slow' } : { text: 'x'.repeat(2_000), chunkSize: 2, chunkDelayMs: 100 },
    );
    const client = new AgentClient(h.env.client, h.taskQueue);
    const viaClient = await start<PlanExecuteResult>('planExecute', { task: 'Take your time', model: 'pe-slow-controls' });
    await waitUntilStreaming(viaClient, 'step-1');
    expect(await client.handle(viaClient.workflowId).abort('enough')).toEqual({ state: null, pauseRequested: false, delivery: 'signal' });
    expect(await viaClient.result()).toMatchObject({ status: 'ABORTED', reason: 'aborted: enough' });

    const viaCli = await start<PlanExecuteResult>('planExecute', { task: 'Take your time', model: 'pe-slow-controls' });
    await waitUntilStreaming(viaCli, 'step-1');
    let out = '';
    const code = await runCli(['abort', viaCli.workflowId, '--reason', 'stop'], { connect: async () => client, out: (t) => (out += t), err: (t) => (out += t) });
    expect({ code, out }).toEqual({ code: 0, out: expect.stringContaining(`abort sent to ${viaCli.workflowId} as a signal`) });
    expect(await viaCli.result()).toMatchObject({ status: 'ABORTED', reason: 'aborted: stop' });

    const viaGateway = await start<PlanExecuteResult>('planExecute', { task: 'Take your time', model: 'pe-slow-controls' });
    await waitUntilStreaming(viaGateway, 'step-1');
    const app = buildGateway({ agents: client, token: null });
    const res = await app.inject({ method: 'POST', url: `/v1/runs/${encodeURIComponent(viaGateway.workflowId)}/abort`, payload: { reason: 'halt' } });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 202, body: expect.objectContaining({ delivery: 'signal', state: null }) });
    expect(await viaGateway.result()).toMatchObject({ status: 'ABORTED', reason: 'aborted: halt' });
    await app.close();
  });

  test('custom stages with their own models; abort cancels the running stage', async () => {
    h.model.register('draft', [{ text: 'a draft' }]);
    h.model.register('polish-slow', [{ text: 'y'.repeat(2_000), chunkSize: 2, chunkDelayMs: 100 }]);
    const handle = await start<AgentPipelineResult>('agentPipeline', {
      task: 'Write a haiku',
      stages: [
        { name: 'draft', instructions: 'Draft it.', model: 'draft' },
        { name: 'polish', instructions: 'Polish it.', model: 'polish-slow' },
      ],
    });
    const child = await waitUntilStreaming(handle, 'polish');
    expect(userPrompt(h.model.requests('polish-slow')[0].body)).toContain('Output of the previous stage (draft):\na draft');

    await handle.signal(abortSignal, { reason: 'stop' });
    const result: AgentPipelineResult = await handle.result();
    expect(result).toEqual({
      status: 'ABORTED',
      answer: null,
      stages: [
        { name: 'draft', workflowId: `${handle.workflowId}/draft`, status: 'COMPLETED', answer: 'a draft' },
        { name: 'polish', workflowId: child.workflowId, status: 'ABORTED', answer: null },
      ],
      reason: 'aborted: stop',
    });
    expect(((await child.result()) as AgentRunResult).status).toBe('ABORTED');
  });

  test("a pattern's priority reaches every child: in its input (the provider budget) and as its Temporal priority key", async () => {
    h.model.register('pipe-priority', [{ text: 'first' }, { text: 'second' }]);
    const stages = [{ name: 'one', instructions: 'Do it.' }, { name: 'two', instructions: 'Again.' }];
    const background = await start<AgentPipelineResult>('agentPipeline', { task: 'Batch work', stages, model: 'pipe-priority', priority: 8 });
    expect(await background.result()).toMatchObject({ status: 'COMPLETED', answer: 'second' });
    for (const name of ['one', 'two']) {
      const child = h.env.client.workflow.getHandle(`${background.workflowId}/${name}`);
      const started = (await child.fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
      expect(defaultPayloadConverter.fromPayload(started.input!.payloads![0]!)).toMatchObject({ model: 'pipe-priority', priority: 8 });
      // 8 (background) is Temporal's last priority key, 5.
      expect((await child.describe()).raw.workflowExecutionInfo?.priority?.priorityKey).toBe(temporalPriorityKey(8));
    }

    h.model.register('pe-priority', ({ request }) => ({ text: userPrompt(request).startsWith('You are the planner') ? '1. only' : 'done' }));
    const planned = await start<PlanExecuteResult>('planExecute', { task: 'Plan it', model: 'pe-priority', priority: 0 });
    expect(await planned.result()).toMatchObject({ status: 'COMPLETED' });
    for (const name of ['planner', 'step-1', 'synthesiser']) {
      const started = (await h.env.client.workflow.getHandle(`${planned.workflowId}/${name}`).fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
      expect(defaultPayloadConverter.fromPayload(started.input!.payloads![0]!)).toMatchObject({ priority: 0 });
    }

    const failure = await failureOf(start('agentPipeline', { task: 't', priority: 10 }).then((hd) => hd.result()));
    expect(failure).toMatchObject({ type: 'InvalidInput', message: expect.stringMatching(/^Invalid agentPipeline input: priority: /) });
  });

  test('duplicate stage names are refused', async () => {
    const stages = [{ name: 'a', instructions: 'x' }, { name: 'a', instructions: 'y' }];
    const failure = await failureOf(start('agentPipeline', { task: 't', stages }).then((hd) => hd.result()));
    expect(failure).toMatchObject({ type: 'InvalidInput', message: 'Invalid agentPipeline input: stages: stage names must be unique' });
  });
});
