/**
 * The workflow thread started before the worker's modules load (src/worker/early-thread.ts) and adopted by the
 * product's `Worker` (src/worker/sdk-worker.ts): the adopted thread is the one that runs the workflows, a worker the
 * SDK must build otherwise ends it, and a process that never adopts it still exits.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Worker as NodeWorker } from 'node:worker_threads';
import { NativeConnection } from '@temporalio/worker';
import { AgentClient } from '../src/client';
import { workerConfig } from '../src/config';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { startWorkflowThreadEarly, takeEarlyWorkflowThread } from '../src/worker/early-thread';
import { AgentSdkWorker } from '../src/worker/sdk-worker';
import { createAgentWorker } from '../src/worker';
import { quietRuntime, workflowBundle } from './support/agent-harness';
import { testServerAddress } from './support/temporal';

const exec = promisify(execFile);
const SCRIPT = 'early-thread';
const exited = (thread: NodeWorker) => new Promise<number>((resolve) => thread.once('exit', resolve));
/** Milliseconds the thread's event loop has spent busy since it started. */
const busyMs = (thread: NodeWorker) => thread.performance.eventLoopUtilization().active;

let model: ScriptedModel;

beforeAll(async () => {
  quietRuntime();
  model = await startScriptedModel();
  model.register(SCRIPT, ({ request }) =>
    request.messages.some((m: { role: string }) => m.role === 'tool') ? { text: 'Listed.' } : { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] },
  );
});

afterAll(async () => {
  await model?.close();
});

test('the worker adopts the thread started early: its runs execute there, and shutting the worker down ends it', async () => {
  const thread = startWorkflowThreadEarly();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-early-'));
  const env = {
    TEMPORAL_ADDRESS: testServerAddress(),
    TEMPORAL_TASK_QUEUE: `early-${randomUUID()}`,
    LLM_BASE_URL: model.url,
    LLM_API_KEY: 'scripted',
    AGENT_WORKSPACE: dir,
    AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
    AGENT_BLOB_DIR: path.join(dir, 'blobs'),
  };
  const agent = await createAgentWorker({ config: workerConfig(env) });
  const end = exited(thread);
  const running = agent.run();
  expect(takeEarlyWorkflowThread()).toBeUndefined(); // taken by the worker, not left waiting
  const agents = await AgentClient.connect({ address: env.TEMPORAL_ADDRESS, namespace: 'default', taskQueue: env.TEMPORAL_TASK_QUEUE });
  try {
    const before = busyMs(thread);
    const run = await agents.start({ prompt: 'List the files.', model: SCRIPT });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Listed.', toolCalls: 1 });
    // The run's activations ran in the adopted thread (the SDK would otherwise have started one of its own).
    expect(busyMs(thread) - before).toBeGreaterThan(1);
  } finally {
    await agents.close();
    agent.shutdown();
    await running;
  }
  await end;
}, 60_000);

test('a worker the SDK builds its own way (a pool of threads, debug mode) ends the early thread instead', async () => {
  const connection = await NativeConnection.connect({ address: testServerAddress() });
  try {
    for (const options of [{ workflowThreadPoolSize: 2 }, { debugMode: true }]) {
      const thread = startWorkflowThreadEarly();
      const end = exited(thread);
      const worker = await AgentSdkWorker.create({ connection, taskQueue: `early-${randomUUID()}`, workflowBundle: await workflowBundle(), ...options });
      await end; // terminated, not left idle beside the SDK's own threads
      expect(takeEarlyWorkflowThread()).toBeUndefined();
      const running = worker.run();
      worker.shutdown();
      await running;
    }
  } finally {
    await connection.close();
  }
}, 60_000);

test('a process that starts the thread and never creates a worker still exits', async () => {
  const module = path.resolve(__dirname, '../src/worker/early-thread.ts');
  const { stdout } = await exec(process.execPath, ['--import', 'tsx', '-e', `require(${JSON.stringify(module)}).startWorkflowThreadEarly(); console.log('started')`], {
    timeout: 20_000,
  });
  expect(stdout.trim()).toBe('started'); // and it ended: exec kills it, and fails, after 20 s
});
