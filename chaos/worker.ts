/**
 * The chaos worker process: the real agent worker plus `recordEffect`, a side-effecting tool that appends one
 * line per real execution to CHAOS_EFFECTS_FILE, so a side effect done twice shows up as two lines.
 */
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { z } from 'zod';
import { defineTool } from '../src/activities';
import { workerConfig } from '../src/config';
import { createAgentWorker } from '../src/worker';

/** One line of the effects file. */
export interface EffectLine {
  key: string;
  runId: string;
  label: string;
  pid: number;
  time: string;
}

const effectsFile = process.env.CHAOS_EFFECTS_FILE;
// Holding the call open a little after acting widens the window in which a kill leaves an unknown outcome.
const settleMs = Number(process.env.CHAOS_EFFECT_SETTLE_MS ?? 200);

export const recordEffect = defineTool({
  name: 'recordEffect',
  description: 'Record that the run did its one side effect.',
  parameters: z.object({ runId: z.string().min(1), label: z.string().min(1) }),
  sideEffects: true,
  async execute({ runId, label }, ctx) {
    if (!effectsFile) throw new Error('CHAOS_EFFECTS_FILE is not set');
    const line: EffectLine = { key: ctx.idempotencyKey, runId, label, pid: process.pid, time: new Date().toISOString() };
    appendFileSync(effectsFile, `${JSON.stringify(line)}\n`);
    await sleep(settleMs);
    return `recorded ${label} for ${runId}`;
  },
});

/**
 * Loads the workflow code from the bundle the harness built once (CHAOS_WORKFLOW_BUNDLE) instead of bundling it
 * on every start, as production workers do: bundling takes many seconds of CPU, and the worker restarts often.
 */
function usePrebuiltBundle(codePath: string | undefined): void {
  if (!codePath) return;
  const create = Worker.create.bind(Worker);
  Worker.create = (options) => create(options.workflowsPath ? { ...options, workflowsPath: undefined, workflowBundle: { codePath } } : options);
}

async function main(): Promise<void> {
  // The harness keeps this output in a log file; info lines from every run would drown the warnings.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  usePrebuiltBundle(process.env.CHAOS_WORKFLOW_BUNDLE);
  const agent = await createAgentWorker({ config: workerConfig(process.env), tools: [recordEffect] });
  console.log(`chaos worker ${process.pid} polling ${process.env.TEMPORAL_TASK_QUEUE}`);
  await agent.run();
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
