/**
 * Observability: OpenTelemetry spans of a run (client, workflow, activities) with an in-memory exporter, and the
 * worker process's Prometheus metrics and JSON logs (AGENT_METRICS_PORT, AGENT_LOG_FORMAT=json).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { agentDataConverter, AgentClient } from '../src/client';
import type { AgentRunResult } from '../src/common/messages';
import { codecSettings, workerConfig } from '../src/config';
import { startTracing } from '../src/observability/tracing';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { createAgentWorker } from '../src/worker';
import { quietRuntime, waitFor } from './support/agent-harness';
import { testServerAddress } from './support/temporal';
import { freePort } from '../scripts/lib/free-port';

const ROOT = path.resolve(__dirname, '..');
let model: ScriptedModel;
beforeAll(async () => {
  quietRuntime();
  model = await startScriptedModel();
  // One tool call, then an answer: a run with callModel and executeTool activities.
  model.register('observed', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool')
      ? { text: 'The workspace holds notes.txt.' }
      : { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] },
  );
  // The same through the MCP tool of test/fixtures/mcp-server.ts.
  model.register('traced', ({ request }) => {
    const result = request.messages.find((m: any) => m.role === 'tool');
    return result ? { text: `2 + 3 = ${result.content}` } : { toolCalls: [{ name: 'fixtures_add', arguments: { a: 2, b: 3 } }] };
  });
});
afterAll(async () => model?.close());

/** What createAgentWorker reads, for a worker of its own on the test server. */
function workerEnv(taskQueue: string): NodeJS.ProcessEnv {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-obs-'));
  const workspace = path.join(dir, 'ws');
  mkdirSync(workspace);
  writeFileSync(path.join(workspace, 'notes.txt'), 'notes');
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: testServerAddress(),
    TEMPORAL_TASK_QUEUE: taskQueue,
    LLM_BASE_URL: model.url,
    LLM_API_KEY: 'scripted',
    LLM_MODEL: 'observed',
    AGENT_WORKSPACE: workspace,
    AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
    AGENT_BLOB_DIR: path.join(dir, 'blobs'),
  };
}

test('a run on a worker from createAgentWorker produces client, workflow and activity spans in one trace, with its workflow id', async () => {
  const memory = new InMemorySpanExporter();
  const tracing = startTracing(new SimpleSpanProcessor(memory), 'agent-test');
  // The worker also takes an MCP server from the environment, as in production (see docs/mcp.md).
  const mcpServer = { name: 'fixtures', command: process.execPath, args: ['--import', 'tsx', 'test/fixtures/mcp-server.ts'], cwd: ROOT };
  // The worker's sizing from the environment too: its sticky cache, its workflow task slots and threads.
  const env: NodeJS.ProcessEnv = { ...workerEnv(`obs-trace-${process.pid}-${Date.now()}`), LLM_MODEL: 'traced', AGENT_MCP_SERVERS: JSON.stringify([mcpServer]), AGENT_CACHED_RUNS: '50', AGENT_WORKFLOW_TASK_SLOTS: '8', AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS: '3', AGENT_WORKFLOW_THREADS: '2' };
  const agent = await createAgentWorker({ config: workerConfig(env), tracing });
  expect(agent.worker.options.maxCachedWorkflows).toBe(50);
  expect(agent.worker.options.tuner.workflowTaskSlotSupplier).toMatchObject({ type: 'fixed-size', numSlots: 8 });
  expect(agent.worker.options.workflowThreadPoolSize).toBe(2);
  // The worker of the background queue comes once the worker polls.
  expect(agent.backgroundWorker).toBeUndefined();
  expect(agent.mcpServers.map((s) => s.tools)).toEqual([['fixtures_add', 'fixtures_echo', 'fixtures_fail']]);
  const mcpPid = agent.mcpServers[0].pid!;
  const running = agent.run();
  // AgentClient adds the client interceptor when tracing is on (by default, when the environment configures it).
  const agents = await AgentClient.connect(
    { address: env.TEMPORAL_ADDRESS, taskQueue: env.TEMPORAL_TASK_QUEUE },
    { dataConverter: agentDataConverter(codecSettings(env)), tracing: true },
  );
  try {
    const run = await agents.start({ prompt: 'What is in the workspace?' });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: '2 + 3 = 5', toolCalls: 1 });
    // Beside it by now, the worker of the background queue: its own slots, and a cache no larger than the worker's.
    await waitFor(() => agent.backgroundWorker?.getState() === 'RUNNING' || undefined, 20_000, 'the background worker');
    expect(agent.backgroundWorker?.options).toMatchObject({ taskQueue: `${env.TEMPORAL_TASK_QUEUE}-background`, maxCachedWorkflows: 50 });
    expect(agent.backgroundWorker?.options.tuner.workflowTaskSlotSupplier).toMatchObject({ type: 'fixed-size', numSlots: 3 });
    const id = run.workflowId;
    // Workflow spans leave the sandbox through a sink after the activation that ends them.
    const spans = await waitFor(() => {
      const all = memory.getFinishedSpans();
      return all.some((s) => s.name === 'RunWorkflow:agentRun') ? all : undefined;
    }, 10_000, 'the workflow span');
    const named = (name: string) => spans.filter((s) => s.name === name);

    const [start] = named('StartWorkflow:agentRun');
    expect(start.attributes.temporalWorkflowId).toBe(id);
    const [workflow] = named('RunWorkflow:agentRun');
    expect(workflow.attributes.workflowId).toBe(id);
    expect(workflow.parentSpanId).toBe(start.spanContext().spanId);
    for (const activity of ['callModel', 'executeTool']) {
      const runs = named(`RunActivity:${activity}`);
      expect(runs.length).toBeGreaterThan(0);
      for (const span of runs) expect(span.attributes.temporalWorkflowId).toBe(id);
    }
    expect(named('RunActivity:callModel')).toHaveLength(2);
    expect(new Set([start, workflow, ...named('RunActivity:executeTool')].map((s) => s.spanContext().traceId)).size).toBe(1);
  } finally {
    await agents.close();
    agent.shutdown();
    await running;
    await tracing.shutdown();
  }
  // Shutting the worker down closed its MCP clients, and with them the server process.
  await waitFor(() => (isRunning(mcpPid) ? undefined : true), 5_000, `MCP server process ${mcpPid} to exit`);
}, 120_000);

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}


describe('the worker process', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  test('serves agent metrics on AGENT_METRICS_PORT and logs JSON lines with workflow ids', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...workerEnv(`obs-metrics-${process.pid}-${Date.now()}`), AGENT_METRICS_PORT: `127.0.0.1:${port}`, AGENT_LOG_FORMAT: 'json' };
    const stdout: string[] = [];
    let stderr = '';
    child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let buffer = '';
    child.stdout!.on('data', (d: Buffer) => {
      buffer += d.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      stdout.push(...lines.filter(Boolean));
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const context = () => `\n--- stdout ---\n${stdout.join('\n').slice(-3_000)}\n--- stderr ---\n${stderr.slice(-3_000)}`;
    await waitFor(() => (stdout.some((l) => l.includes('worker: polling')) ? true : undefined), 90_000, 'the worker to poll').catch((err: Error) => {
      throw new Error(err.message + context());
    });

    const agents = await AgentClient.connect({ address: env.TEMPORAL_ADDRESS, taskQueue: env.TEMPORAL_TASK_QUEUE }, { dataConverter: agentDataConverter(codecSettings(env)) });
    let result: AgentRunResult;
    let id: string;
    try {
      const run = await agents.start({ prompt: 'What is in the workspace?' });
      id = run.workflowId;
      result = await run.result();
    } finally {
      await agents.close();
    }
    expect(result).toMatchObject({ status: 'COMPLETED', toolCalls: 1 });

    const url = `http://127.0.0.1:${port}/metrics`;
    const wanted = [
      /^agent_model_calls\{[^}]*model="observed"[^}]*ok="true"[^}]*\} 2$/m,
      /^agent_tool_calls\{[^}]*ok="true"[^}]*tool="listFiles"[^}]*\} 1$/m,
      /^agent_tokens\{[^}]*kind="completion"[^}]*\} [1-9]\d*$/m,
      /^agent_state_duration_ms_count\{[^}]*state="STREAMING"[^}]*\} 2$/m,
      /^agent_state_duration_ms_count\{[^}]*state="TOOL_EXECUTING"[^}]*\} 1$/m,
      /^agent_state_duration_ms_bucket\{[^}]*le="3600000"[^}]*\} \d+$/m, // the worker's own buckets, up to an hour
    ];
    let metrics = '';
    await waitFor(async () => {
      metrics = await (await fetch(url)).text();
      return wanted.every((re) => re.test(metrics)) ? true : undefined;
    }, 15_000, 'the agent metrics').catch((err: Error) => {
      const ours = metrics.split('\n').filter((l) => l.includes('agent_')).join('\n');
      throw new Error(`${err.message}\n--- agent metrics ---\n${ours}`);
    });

    // Every stdout line is a JSON object; the workflow's transition logs carry the run's ids. The lines cross a pipe
    // from the worker process, so they may reach this one after the run's result did (measured: 100-150 ms later).
    const parsed = () => stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
    const transitionOf = (to: string) => parsed().find((e) => e.message === to && e.workflowId === id!);
    await waitFor(() => (transitionOf('CRITIQUE -> COMPLETED') ? true : undefined), 10_000, "the run's last transition in the worker's log").catch(
      (err: Error) => {
        throw new Error(err.message + context());
      },
    );
    expect(parsed().every((e) => typeof e.time === 'string' && typeof e.level === 'string' && typeof e.message === 'string')).toBe(true);
    expect(transitionOf('IDLE -> STREAMING')).toMatchObject({ level: 'INFO', workflowType: 'agentRun', runId: expect.any(String), event: 'START' });

    child.kill('SIGTERM');
    await waitFor(() => (child!.exitCode !== null || child!.signalCode !== null ? true : undefined), 20_000, 'the worker to exit');
  }, 180_000);
});
