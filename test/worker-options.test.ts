/** createAgentWorker's options over the environment (resolveWorkerConfig): what each option overrides, and what it leaves. */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import os from 'node:os';
import { workerConfig } from '../src/config';
import type { WorkflowInfo } from '@temporalio/workflow';
import { checkCritics, createCustomCritics, InvalidCriticError } from '../src/activities/custom-critic';
import { runHookSinks } from '../src/stream/hooks';
import { agentPlugin } from '../src/worker/plugin';
import { agentWorkerOptions, BACKGROUND_WORKFLOW_TASK_SLOTS, deploymentOptions, openAIClient, resolveWorkerConfig, WORKFLOW_TASK_SLOTS } from '../src/worker/worker';
import { backgroundTaskQueue } from '../src/common/fairness';
import { tuneWorkerHeap } from '../src/worker/heap';

const env: NodeJS.ProcessEnv = {
  TEMPORAL_ADDRESS: 'temporal.env:7233',
  TEMPORAL_NAMESPACE: 'env-ns',
  TEMPORAL_TASK_QUEUE: 'env-queue',
  LLM_API_KEY: 'env-key',
  LLM_MODEL: 'env-model',
  AGENT_WORKSPACE: '/env/ws',
};

test('no options: the settings the environment gives, as the worker process reads them', () => {
  expect(resolveWorkerConfig({ env })).toEqual(workerConfig(env));
});

test('each option overrides its setting and leaves the rest to the environment', () => {
  const config = resolveWorkerConfig({
    env,
    connection: { address: 'temporal.opt:7233' },
    namespace: 'opt-ns',
    taskQueue: 'opt-queue',
    model: { baseURL: 'http://llm.opt/v1', name: 'opt-model' },
    workspace: '/opt/ws',
    ledgerFile: '/opt/ledger.sqlite',
  });
  expect(config.temporal).toMatchObject({ address: 'temporal.opt:7233', namespace: 'opt-ns', taskQueue: 'opt-queue' });
  expect(config.llm).toEqual({ baseURL: 'http://llm.opt/v1', apiKey: 'env-key', model: 'opt-model' });
  expect(config).toMatchObject({ workspace: '/opt/ws', ledgerFile: '/opt/ledger.sqlite' });
  expect(config.codecs).toEqual(workerConfig(env).codecs);
});

test('a model given by name keeps the endpoint and key of the environment', () => {
  expect(resolveWorkerConfig({ env, model: 'gpt-4.1' }).llm).toEqual({ apiKey: 'env-key', model: 'gpt-4.1' });
});

test("keys and providers given in code replace the environment's", () => {
  const several = { ...env, LLM_API_KEY: 'env-1,env-2' };
  expect(resolveWorkerConfig({ env: several }).llm).toMatchObject({ apiKey: 'env-1', apiKeys: ['env-1', 'env-2'] });
  expect(resolveWorkerConfig({ env: several, model: { apiKey: 'code' } }).llm).toMatchObject({ apiKey: 'code', apiKeys: ['code'] });
  expect(resolveWorkerConfig({ env: several, model: { apiKeys: ['c1', 'c2'] } }).llm).toMatchObject({ apiKey: 'c1', apiKeys: ['c1', 'c2'] });
  const providers = { groq: { baseURL: 'https://api.groq.com/openai/v1', apiKeys: ['g'] } };
  expect(resolveWorkerConfig({ env, model: { providers } }).llm.providers).toEqual(providers);
});

test('options set to undefined leave the setting as it was', () => {
  const config = resolveWorkerConfig({ env, taskQueue: undefined, connection: { address: undefined }, model: { apiKey: undefined } });
  expect(config).toEqual(workerConfig(env));
});

test('a whole config replaces the environment as the base', () => {
  const base = workerConfig({ TEMPORAL_TASK_QUEUE: 'base-queue' });
  const config = resolveWorkerConfig({ config: base, env, workspace: 'ws' });
  expect(config.temporal.taskQueue).toBe('base-queue');
  expect(config.llm).toEqual({});
  expect(config.workspace).toBe('ws');
  expect(config.ledgerFile).toBe(path.resolve('./.agent/tool-ledger.sqlite'));
});

test("the plugin registers the workflow's sinks (the stream, the model calls it stops, the run hooks) on workers and replay workers, beside sinks of their own", () => {
  const own = { audit: { record: { fn: () => undefined } } };
  const plugin = agentPlugin({ llm: { baseURL: 'http://127.0.0.1:1/v1', apiKey: 'none', model: 'm' } });
  const replay = plugin.configureReplayWorker({ sinks: own });
  expect(Object.keys(replay.sinks ?? {}).sort()).toEqual(['audit', 'modelCalls', 'runHooks', 'stream']);
  expect([replay.sinks?.stream?.publish?.callDuringReplay, replay.sinks?.modelCalls?.stop?.callDuringReplay, replay.sinks?.runHooks?.ended?.callDuringReplay]).toEqual([false, false, false]);
  const worker = plugin.configureWorker({ taskQueue: 'q', sinks: own });
  expect(Object.keys(worker.sinks ?? {}).sort()).toEqual(['audit', 'modelCalls', 'runHooks', 'stream']);
});

describe('lifecycle hooks (stream/hooks.ts)', () => {
  const info = { workflowId: 'wf-1', runId: 'run-1' } as WorkflowInfo;
  const result = { status: 'COMPLETED' as const, answer: 'yes', reason: null, lastText: 'yes', partialText: null, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, modelCalls: 1, costUsd: 0 }, loops: 1, toolCalls: 0 };
  const change = { step: 1, from: 'IDLE', to: 'STREAMING', event: 'START', at: '2026-01-01T00:00:00.000Z' };
  const logged = () => {
    const lines: Array<{ message: string; meta?: Record<string, unknown> }> = [];
    return { lines, log: () => ({ warn: (message: string, meta?: Record<string, unknown>) => void lines.push({ message, meta }) }) };
  };

  test("the plugin's workers call the hooks given to it, each change with its run's ids", () => {
    const seen: unknown[] = [];
    const plugin = agentPlugin({ llm: { baseURL: 'http://127.0.0.1:1/v1', apiKey: 'none', model: 'm' }, hooks: { onTransition: (t) => void seen.push(t), onRunEnd: (e) => void seen.push(e) } });
    const sinks = plugin.configureWorker({ taskQueue: 'q' }).sinks!;
    void sinks.runHooks.transitioned.fn(info, [change, { ...change, step: 2, from: 'STREAMING', to: 'CRITIQUE', event: 'MODEL_RESPONDED' }]);
    void sinks.runHooks.ended.fn(info, result);
    expect(seen).toEqual([{ workflowId: 'wf-1', runId: 'run-1', ...change }, expect.objectContaining({ step: 2, to: 'CRITIQUE' }), { workflowId: 'wf-1', runId: 'run-1', result }]);
  });

  test('a hook that throws or rejects is logged, naming the hook and the run; the sink returns at once', async () => {
    const { lines, log } = logged();
    const sinks = runHookSinks({ onTransition: () => { throw new Error('boom'); }, onRunEnd: () => Promise.reject(new Error('later')) }, log);
    expect(sinks.runHooks.transitioned.fn(info, [change])).toBeUndefined();
    expect(sinks.runHooks.ended.fn(info, result)).toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([
      { message: 'hook onTransition failed: boom', meta: { workflowId: 'wf-1', runId: 'run-1', step: 1, hook: 'onTransition' } },
      { message: 'hook onRunEnd failed: later', meta: { workflowId: 'wf-1', runId: 'run-1', hook: 'onRunEnd' } },
    ]);
  });

  test('a hook that never settles is logged as hanging, and holds nothing', async () => {
    const { lines, log } = logged();
    const sinks = runHookSinks({ onRunEnd: () => new Promise<void>(() => undefined) }, log, 20);
    expect(sinks.runHooks.ended.fn(info, result)).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines).toEqual([{ message: 'hook onRunEnd has not settled after 20 ms', meta: { workflowId: 'wf-1', runId: 'run-1', hook: 'onRunEnd' } }]);
  });

  test('no hooks: the sink does nothing', () => {
    const { lines, log } = logged();
    const sinks = runHookSinks(undefined, log);
    void sinks.runHooks.transitioned.fn(info, [change]);
    void sinks.runHooks.ended.fn(info, result);
    expect(lines).toEqual([]);
  });
});

describe('custom critics (activities/custom-critic.ts)', () => {
  test('a bad name or a value that is not a function is refused when the worker is built, naming the critic', () => {
    expect(() => checkCritics({ 'a b': () => ({ action: 'complete', reason: 'ok' }) })).toThrow(new InvalidCriticError('critic "a b": the name must be 1-64 characters of [A-Za-z0-9_.-], starting with a letter or digit'));
    expect(() => checkCritics({ judge: 'yes' as never })).toThrow(new InvalidCriticError('critic "judge": must be a function (request, context) => decision, not string'));
    expect([...checkCritics({ judge: () => ({ action: 'complete', reason: 'ok' }) }).keys()]).toEqual(['judge']);
  });

  test('checkCritic refuses a name the worker lacks, non-retryably, naming the critics it has', async () => {
    const { checkCritic } = createCustomCritics({ judge: () => ({ action: 'complete', reason: 'ok' }), auditor: () => ({ action: 'retry', reason: 'no' }) });
    await expect(checkCritic('judge')).resolves.toBeUndefined();
    await expect(checkCritic('nobody')).rejects.toMatchObject({ type: 'UnknownCritic', nonRetryable: true, message: 'unknown critic "nobody"; the worker\'s critics: auditor, judge' });
    await expect(createCustomCritics(undefined).checkCritic('x')).rejects.toMatchObject({ message: 'unknown critic "x"; the worker has no critics registered (createAgentWorker({ critics }))' });
  });
});

test('versioning: the option over AGENT_DEPLOYMENT_NAME/AGENT_BUILD_ID, PINNED unless told; false turns it off; unversioned gives the SDK no deployment options', () => {
  const versioned = { ...env, AGENT_DEPLOYMENT_NAME: 'agents', AGENT_BUILD_ID: 'env-build' };
  expect(resolveWorkerConfig({ env: versioned }).versioning).toEqual({ deploymentName: 'agents', buildId: 'env-build', defaultBehavior: 'PINNED' });
  expect(resolveWorkerConfig({ env: versioned, versioning: { deploymentName: 'agents', buildId: 'opt-build' } }).versioning).toEqual({ deploymentName: 'agents', buildId: 'opt-build', defaultBehavior: 'PINNED' });
  expect(resolveWorkerConfig({ env: versioned, versioning: false }).versioning).toBeUndefined();
  expect(deploymentOptions(resolveWorkerConfig({ env }).versioning)).toEqual({});
  expect(deploymentOptions(resolveWorkerConfig({ env: versioned }).versioning)).toEqual({
    workerDeploymentOptions: { version: { deploymentName: 'agents', buildId: 'env-build' }, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
  });
});

test('workflow task slots: the SDK\'s 40 unless AGENT_WORKFLOW_TASK_SLOTS says otherwise; a value out of range is refused, naming the variable', () => {
  expect(agentWorkerOptions({ openai: openAIClient({ baseURL: 'http://127.0.0.1:9/v1' }), defaultModel: 'unset', workspace: os.tmpdir() }).maxConcurrentWorkflowTaskExecutions).toBe(WORKFLOW_TASK_SLOTS);
  expect(WORKFLOW_TASK_SLOTS).toBe(40);
  expect(workerConfig({}).workflowTaskSlots).toBeUndefined();
  expect(workerConfig({ AGENT_WORKFLOW_TASK_SLOTS: ' 8 ' }).workflowTaskSlots).toBe(8);
  for (const bad of ['1', '0', '8.5', 'many', '1001']) {
    expect(() => workerConfig({ AGENT_WORKFLOW_TASK_SLOTS: bad })).toThrow(`AGENT_WORKFLOW_TASK_SLOTS must be a whole number from 2 to 1000, got "${bad}"`);
  }
});

test('workflow threads: the SDK\'s unless AGENT_WORKFLOW_THREADS says otherwise; a value that is not a count from 1 to 64 is refused, naming the variable', () => {
  expect(workerConfig({}).workflowThreads).toBeUndefined();
  expect(workerConfig({ AGENT_WORKFLOW_THREADS: ' 2 ' }).workflowThreads).toBe(2);
  for (const bad of ['0', '1.5', 'two', '65']) {
    expect(() => workerConfig({ AGENT_WORKFLOW_THREADS: bad })).toThrow(`AGENT_WORKFLOW_THREADS must be a whole number from 1 to 64, got "${bad}"`);
  }
});

test('background workflow task slots: 2 on their own task queue unless AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS says otherwise, 0 for none; 1 or a value that is not a count is refused', () => {
  expect(BACKGROUND_WORKFLOW_TASK_SLOTS).toBe(2);
  expect(backgroundTaskQueue('agent-runs')).toBe('agent-runs-background');
  expect(workerConfig({}).backgroundTaskSlots).toBeUndefined();
  expect(workerConfig({ AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS: ' 4 ' }).backgroundTaskSlots).toBe(4);
  expect(workerConfig({ AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS: '0' }).backgroundTaskSlots).toBe(0);
  expect(resolveWorkerConfig({ env: { AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS: '4' }, backgroundTaskSlots: 0 }).backgroundTaskSlots).toBe(0);
  for (const bad of ['1', '-2', '2.5', 'few', '1001']) {
    expect(() => workerConfig({ AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS: bad })).toThrow(`AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS must be 0 (no background task queue) or a whole number from 2 to 1000, got "${bad}"`);
  }
});

test('cached runs: the SDK\'s sizing unless AGENT_CACHED_RUNS says otherwise, 0 for none; 1 or a value that is not a count is refused, naming the variable', () => {
  expect(workerConfig({}).cachedRuns).toBeUndefined();
  expect(workerConfig({ AGENT_CACHED_RUNS: ' 500 ' }).cachedRuns).toBe(500);
  expect(workerConfig({ AGENT_CACHED_RUNS: '0' }).cachedRuns).toBe(0);
  for (const bad of ['1', '-5', '2.5', 'lots', '1000001']) {
    expect(() => workerConfig({ AGENT_CACHED_RUNS: bad })).toThrow(`AGENT_CACHED_RUNS must be 0 (no run kept in memory) or a whole number from 2 to 1000000, got "${bad}"`);
  }
});

describe("the worker process's heap (src/worker/heap.ts)", () => {
  /** The growth factor V8 applies at a full collection in a fresh process that first calls `tuneWorkerHeap(percent)`. */
  const factorAfter = (percent: string): string => {
    const script = `require('./src/worker/heap.ts').tuneWorkerHeap(${percent}); const keep = []; for (let i = 0; i < 300000; i++) keep.push({ i }); gc();`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--trace-gc-verbose', '--expose-gc', '-e', script], { cwd: path.join(__dirname, '..'), encoding: 'utf8' });
    return /\[HeapController\] Limit: .* \(([\d.]+)\)/.exec(out)?.[1] ?? `no limit in: ${out.slice(0, 200)}`;
  };

  test('the old generation grows to four times what is live by default, or as far as asked', () => {
    expect(factorAfter('')).toBe('4.0');
    expect(factorAfter('50')).toBe('1.5');
    expect(() => tuneWorkerHeap(0)).not.toThrow(); // V8's own growth: no flag set
    expect(() => tuneWorkerHeap(-1)).toThrow('the heap growing percent must be a whole number from 0 to 1000, got -1');
  });

  test('AGENT_HEAP_GROWING_PERCENT sets it, and a value that is not a percent is refused, naming the variable', () => {
    expect(workerConfig({ AGENT_HEAP_GROWING_PERCENT: ' 150 ' }).heapGrowingPercent).toBe(150);
    expect(workerConfig({}).heapGrowingPercent).toBeUndefined();
    expect(() => workerConfig({ AGENT_HEAP_GROWING_PERCENT: '4x' })).toThrow('AGENT_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000');
    expect(() => workerConfig({ AGENT_HEAP_GROWING_PERCENT: '5000' })).toThrow('AGENT_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000');
  });
});

