/**
 * The client against a worker from before 0.2, on the real server: its time-travel query is `snapshotAt`, and the
 * client's `snapshotAt()` asks for `stateAt` first, then falls back on the server's answer that no handler is
 * registered. The fallback rests on that answer's wording, so this test is what notices when an SDK changes it.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { AgentClient } from '../src/client';
import { quietRuntime, waitFor } from './support/agent-harness';
import { testServerAddress } from './support/temporal';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const OLD_WORKFLOWS = path.join(__dirname, 'fixtures', 'old-worker-workflows.ts');

test("a run on a worker from before stateAt answers time travel through snapshotAt, and its own refusals stand", async () => {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
  try {
    const taskQueue = `old-worker-${randomUUID()}`;
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath: OLD_WORKFLOWS });
    await worker.runUntil(async () => {
      const started = await env.client.workflow.start('agentRun', { taskQueue, workflowId: `old-${randomUUID()}` });
      // A query needs the run's first workflow task done: the handler is set there.
      await waitFor(async () => ((await started.fetchHistory()).events?.some((e) => e.workflowTaskCompletedEventAttributes) ? true : undefined), 20_000, 'the first workflow task');
      const run = new AgentClient(env.client, taskQueue).handle(started.workflowId);

      await expect(run.snapshotAt(2, { includeMessages: true })).resolves.toEqual({ workflowId: 'old-worker', step: 2, state: 'STREAMING', messages: [] });
      await expect(run.snapshotAt(1)).resolves.toEqual({ workflowId: 'old-worker', step: 1, state: 'STREAMING' });
      // The old handler's own failure is the answer: the client does not ask again, nor hide it.
      await expect(run.snapshotAt(3)).rejects.toThrow(/step 3 is not in this run/);
      await started.terminate('test done');
    });
  } finally {
    await env.teardown();
  }
}, 60_000);
