/**
 * kill -9 of the worker during the second model call: after a restart the run completes, the first model call is
 * not sent again, and the interrupted one is retried because the new worker handed it back (WorkerCrashed, from the
 * journal of activities in flight beside the tool ledger), not because its heartbeat timed out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { WORKFLOW_TYPE } from '../src/common/constants';
import type { AgentRunResult } from '../src/common/messages';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { waitFor } from './support/agent-harness';
import { testServerAddress } from './support/temporal';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const ROOT = path.resolve(__dirname, '..');
let model: ScriptedModel;
let env: TestWorkflowEnvironment;
const workers: ChildProcess[] = [];
const output: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await env?.teardown();
  await model?.close();
});

/** The real worker entry point in its own process, so it can be killed for real. */
function startWorkerProcess(taskQueue: string, workspace: string, ledger: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: testServerAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      LLM_BASE_URL: model.url,
      LLM_API_KEY: 'scripted',
      LLM_MODEL: 'crash',
      AGENT_WORKSPACE: workspace,
      AGENT_LEDGER: ledger,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Kept for the failure message rather than printed: a healthy worker is chatty.
  child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  workers.push(child);
  return child;
}

test('the run survives kill -9 of the worker during the second model call', async () => {
  const hasToolResult = (body: any) => body.messages.some((m: any) => m.role === 'tool');
  model.register('crash', ({ request }) =>
    hasToolResult(request)
      ? { text: 'The workspace has one file, data.txt, and the run survived.', chunkSize: 3, chunkDelayMs: 150 }
      : { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] },
  );
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'agent-crash-'));
  writeFileSync(path.join(workspace, 'data.txt'), 'data');
  const taskQueue = `crash-${randomUUID()}`;
  const ledger = path.join(mkdtempSync(path.join(os.tmpdir(), 'agent-crash-ledger-')), 'tool-ledger.sqlite');

  const first = startWorkerProcess(taskQueue, workspace, ledger);
  const handle = await env.client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId: `crash-${randomUUID()}`, args: [{ prompt: 'List the workspace' }] });
  await waitFor(() => (model.requests('crash').some((r) => hasToolResult(r.body)) ? true : undefined), 90_000, 'the second model call');

  first.kill('SIGKILL');
  await waitFor(() => (first.signalCode === 'SIGKILL' ? true : undefined), 5_000, 'the worker to die');
  const second = startWorkerProcess(taskQueue, workspace, ledger);

  const result: AgentRunResult = await handle.result().catch((err: unknown) => {
    throw new Error(`${String(err)}\n--- worker output ---\n${output.join('').slice(-4_000)}`);
  });
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'The workspace has one file, data.txt, and the run survived.', toolCalls: 1 });
  const requests = model.requests('crash');
  expect(requests.filter((r) => !hasToolResult(r.body))).toHaveLength(1); // the first call was not sent again
  expect(requests.filter((r) => hasToolResult(r.body))).toHaveLength(2); // the interrupted call, then its retry
  expect(requests[1].completed).toBe(false);

  // The retry's attempt records why the first one ended: the new worker handed it back, before any heartbeat timeout.
  const history = await handle.fetchHistory();
  const started = history.events!.filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!);
  const retried = started.filter((a) => (a.attempt ?? 1) > 1);
  expect(retried).toHaveLength(1);
  expect(retried[0].lastFailure?.applicationFailureInfo?.type).toBe('WorkerCrashed');
  expect(retried[0].lastFailure?.message).toContain(`/${first.pid}/`);
  expect(output.join('')).toContain('handed back 1 activity attempt(s)');
  expect(second.exitCode).toBeNull();
}, 180_000);
