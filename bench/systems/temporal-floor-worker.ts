/**
 * Child process: the `temporal-floor` system's worker (temporal-floor-workflows.ts), on this project's SDK with the
 * product's activity slots and pollers (PEER_WORKER_OPTIONS). Config comes from BENCH_WORKER (JSON).
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { agentStep } from '../lib/agent-step';
import { serveWorker } from '../lib/serve';
import { PEER_WORKER_OPTIONS } from '../lib/peer-worker';

export interface TemporalFloorWorkerConfig {
  address: string;
  taskQueue: string;
  modelUrl: string;
  workspace: string;
}

export interface TemporalFloorActivities {
  step(messages: ChatCompletionMessageParam[]): Promise<{ answer?: string; added: ChatCompletionMessageParam[] }>;
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_WORKER ?? '{}') as TemporalFloorWorkerConfig;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // Temporal retries the step, as the product's activities leave retries to it.
  const openai = new OpenAI({ baseURL: config.modelUrl, apiKey: 'bench', maxRetries: 0, timeout: 10 * 60_000 });
  const activities: TemporalFloorActivities = { step: (messages) => agentStep(openai, config.workspace, messages) };
  const connection = await NativeConnection.connect({ address: config.address });
  const worker = await Worker.create({
    connection,
    taskQueue: config.taskQueue,
    workflowsPath: require.resolve('./temporal-floor-workflows'),
    activities,
    ...PEER_WORKER_OPTIONS,
  });
  await serveWorker(worker, connection);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
