/**
 * Your critic, your hooks, your timeouts (issue 53): a worker's custom critic chosen per run (`critique: { custom }`),
 * its lifecycle hooks (`onTransition`, `onRunEnd`, whose failures never reach a run), and the per-state timeouts
 * (`timeouts`) with their bounds checked at input. On the real dev server, through the client and the gateway.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { AgentClient, InvalidAgentInputError } from '../src/client';
import type { CriticDecision } from '../src/activities';
import type { CritiqueRequest } from '../src/common/chat';
import { FailureType } from '../src/common/failures';
import { buildGateway } from '../src/gateway/index';
import type { RunEnd, RunTransition } from '../src/stream/hooks';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

const TOKEN = 'critics-hooks-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

/** What the critics were asked, by run; what the hooks were told, by run. */
const asked = new Map<string, CritiqueRequest[]>();
const transitions = new Map<string, RunTransition[]>();
const ends = new Map<string, RunEnd[]>();
/** Runs whose hooks throw, and runs whose hooks never settle. */
const throwing = new Set<string>();
const hanging = new Set<string>();

const record = <T>(map: Map<string, T[]>, id: string, item: T) => map.set(id, [...(map.get(id) ?? []), item]);

beforeAll(async () => {
  h = await startAgentHarness(undefined, {
    critics: {
      /** Rejects a run's first answer, accepts the next. */
      strict: (request, context): CriticDecision => {
        record(asked, context.workflowId, request);
        return asked.get(context.workflowId)!.length === 1 ? { action: 'retry', reason: 'name the river too' } : { action: 'complete', reason: 'the answer names both' };
      },
      /** Fails for good: the rule critic decides. */
      broken: () => {
        throw ApplicationFailure.create({ message: 'the checker is down', nonRetryable: true });
      },
      /** Answers after 60 s unless its run stops waiting first. */
      slow: (_request, { signal }) =>
        new Promise<CriticDecision>((resolve) => {
          const timer = setTimeout(() => resolve({ action: 'retry', reason: 'too late' }), 60_000);
          signal.addEventListener('abort', () => clearTimeout(timer));
        }),
    },
    hooks: {
      onTransition: (t) => {
        record(transitions, t.workflowId, t);
        if (throwing.has(t.workflowId)) throw new Error('onTransition hook broke');
        if (hanging.has(t.workflowId)) return new Promise<void>(() => undefined);
      },
      onRunEnd: async (end) => {
        record(ends, end.workflowId, end);
        if (throwing.has(end.workflowId)) throw new Error('onRunEnd hook broke');
        if (hanging.has(end.workflowId)) await new Promise<void>(() => undefined);
      },
    },
  });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, pollIntervalMs: 100 });
  h.model.register('paris', ({ request }) => ({ text: request.messages.some((m: { content?: unknown }) => String(m.content).startsWith('Your answer needs another attempt')) ? 'Paris, on the Seine.' : 'Paris.' }));
  h.model.register('slow-answer', () => ({ text: 'too late', firstChunkDelayMs: 120_000 }));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const id = (what: string) => `${what}-${randomUUID().slice(0, 8)}`;

describe('a custom critic', () => {
  test('rejects the first answer, accepts the second: the run retries with its reason and completes', async () => {
    const workflowId = id('strict');
    const run = await agents.start({ prompt: 'Where is the Eiffel Tower?', model: 'paris', critique: { custom: 'strict' } }, { workflowId });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Paris, on the Seine.' });
    // The model critic's request: the task and each answer.
    expect(asked.get(workflowId)).toEqual([
      expect.objectContaining({ task: 'Where is the Eiffel Tower?', answer: 'Paris.', critic: 'strict' }),
      expect.objectContaining({ answer: 'Paris, on the Seine.', critic: 'strict' }),
    ]);
    const second = h.model.requests('paris').filter((r) => r.body.messages.some((m: { content?: unknown }) => String(m.content).includes('name the river too')));
    expect(second).toHaveLength(1);
    const state = await run.state();
    expect(state.lastCritique).toEqual({ action: 'complete', reason: 'the answer names both', confidence: 100 });
    expect(state.transitions.filter((t) => t.from === 'CRITIQUE').map((t) => t.to)).toEqual(['STREAMING', 'COMPLETED']);
  }, 60_000);

  test('a critic the worker lacks fails the run at its start, naming the critics it has', async () => {
    const before = h.model.requests('paris').length;
    const run = await agents.start({ prompt: 'Where?', model: 'paris', critique: { custom: 'lenient' } });
    expect(await failureOf(run.result())).toEqual({
      type: FailureType.InvalidInput,
      message: 'Invalid agentRun input: critique.custom: unknown critic "lenient"; the worker\'s critics: broken, slow, strict',
    });
    expect(h.model.requests('paris').length).toBe(before);
  }, 60_000);

  test('a critic that fails for good is replaced by the rule critic, as the model critic is', async () => {
    const run = await agents.start({ prompt: 'Where is the Eiffel Tower?', model: 'paris', critique: { custom: 'broken' } });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Paris.' });
    expect((await run.state()).lastCritique?.reason).toBe('the model answered without calling tools (critic "broken" unavailable: the checker is down)');
  }, 60_000);

  test('a malformed critique is refused at input, naming the field', async () => {
    await expect(agents.start({ prompt: 'x', critique: { custom: 'no spaces allowed' } })).rejects.toThrow(/critique\.custom: the critic's name must be/);
    await expect(agents.start({ prompt: 'x', critique: 'judge' as never })).rejects.toThrow("critique: must be 'rules', 'model' or { custom: '<critic name>' }");
  });
});

describe('lifecycle hooks', () => {
  test('onTransition sees each state change in order; onRunEnd is called once, with the result', async () => {
    const workflowId = id('hooked');
    const run = await agents.start({ prompt: 'Where is the Eiffel Tower?', model: 'paris' }, { workflowId });
    const result = await run.result();
    const state = await run.state();
    await waitFor(() => ends.get(workflowId), 10_000, 'onRunEnd');
    expect(transitions.get(workflowId)!.map(({ step, from, to, event, at }) => ({ step, from, to, event, at }))).toEqual(
      state.transitions.map((t, i) => ({ step: i + 1, from: t.from, to: t.to, event: t.event, at: t.at })),
    );
    expect(state.transitions.length).toBeGreaterThanOrEqual(3);
    // A query after the end replays the run on a worker that has evicted it: the hooks are not called again.
    await h.stopWorker();
    await h.startWorker();
    await run.state();
    expect(ends.get(workflowId)).toEqual([{ workflowId, runId: expect.any(String), result }]);
    expect(transitions.get(workflowId)).toHaveLength(state.transitions.length);
  }, 60_000);

  test('hooks that throw or never settle neither fail nor hold a run', async () => {
    const thrower = id('throwing');
    const hanger = id('hanging');
    throwing.add(thrower);
    hanging.add(hanger);
    const runs = await Promise.all([thrower, hanger].map((workflowId) => agents.start({ prompt: 'Where is the Eiffel Tower?', model: 'paris' }, { workflowId })));
    for (const run of runs) await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Paris.' });
    expect(ends.get(thrower)).toHaveLength(1);
    expect(ends.get(hanger)).toHaveLength(1);
    expect(transitions.get(thrower)!.at(-1)).toMatchObject({ to: 'COMPLETED' });
  }, 60_000);

  test('a failed run ends once too, with its FAILED result', async () => {
    const workflowId = id('failing');
    const run = await agents.start({ prompt: 'x', critique: { custom: 'nobody' } }, { workflowId });
    await failureOf(run.result());
    await waitFor(() => ends.get(workflowId), 10_000, 'onRunEnd');
    expect(ends.get(workflowId)).toEqual([expect.objectContaining({ result: expect.objectContaining({ status: 'FAILED', reason: expect.stringContaining('unknown critic "nobody"') }) })]);
  }, 60_000);
});

describe('per-state timeouts', () => {
  test('a model call that outlasts timeouts.modelCallMs fails the run as a model call that ran out of time', async () => {
    const run = await agents.start({ prompt: 'Hello', model: 'slow-answer', timeouts: { modelAttemptMs: 1_000, modelCallMs: 3_000 } });
    expect((await failureOf(run.result())).message).toMatch(/^model call failed: the model call ran out of time/);
  }, 60_000);

  test('a critic that outlasts timeouts.criticMs is replaced by the rule critic', async () => {
    const run = await agents.start({ prompt: 'Where is the Eiffel Tower?', model: 'paris', critique: { custom: 'slow' }, timeouts: { criticMs: 1_000 } });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Paris.' });
    expect((await run.state()).lastCritique?.reason).toMatch(/^the model answered without calling tools \(critic "slow" unavailable: /);
  }, 60_000);

  test('bad timeouts are refused at input, naming the field', async () => {
    const refused = (timeouts: Record<string, unknown>) => agents.start({ prompt: 'x', timeouts } as never).then(() => 'started', (e: unknown) => e);
    expect(await refused({ modelCallMs: 10 })).toEqual(new InvalidAgentInputError('Invalid agentRun input: timeouts.modelCallMs: must be at least 1000 ms (1 second)'));
    expect(await refused({ criticMs: 2 * 24 * 3600_000 })).toEqual(new InvalidAgentInputError('Invalid agentRun input: timeouts.criticMs: must be at most 86400000 ms (24 hours)'));
    expect(await refused({ compactionMs: '5m' })).toEqual(new InvalidAgentInputError('Invalid agentRun input: timeouts.compactionMs: must be a number of milliseconds'));
    expect(await refused({ modelAttemptMs: 1500.5 })).toEqual(new InvalidAgentInputError('Invalid agentRun input: timeouts.modelAttemptMs: must be a whole number of milliseconds'));
    expect(await refused({ stepMs: 1000 })).toEqual(new InvalidAgentInputError('Invalid agentRun input: timeouts: Unrecognized key: "stepMs"'));
  });
});

describe('through the gateway', () => {
  const headers = { authorization: `Bearer ${TOKEN}` };

  test('a run with a custom critic and timeouts starts; bad timeouts are a 400 naming the field', async () => {
    const started = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { prompt: 'Where is the Eiffel Tower?', model: 'paris', critique: { custom: 'strict' }, timeouts: { criticMs: 30_000 } } });
    expect(started.statusCode).toBe(201);
    await expect(agents.handle(started.json().workflowId).result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Paris, on the Seine.' });
    const refused = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: { prompt: 'x', timeouts: { modelCallMs: 0 } } });
    expect(refused.statusCode).toBe(400);
    expect(JSON.stringify(refused.json())).toContain('timeouts.modelCallMs');
  }, 60_000);
});
