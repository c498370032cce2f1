// Benchmark peer worker: @temporalio/ai-sdk's plugin over an OpenAI-compatible provider pointed at the scripted
// model, on SDK 1.23.0 from this folder's own node_modules. Config comes from BENCH_WORKER (JSON).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { serve } from '../serve.mjs';

const config = JSON.parse(process.env.BENCH_WORKER ?? '{}');
Runtime.install({ logger: new DefaultLogger(config.logLevel ?? 'WARN') });
const provider = createOpenAICompatible({ name: 'scripted', baseURL: config.modelUrl, apiKey: 'bench' });
const connection = await NativeConnection.connect({ address: config.address });
const worker = await Worker.create({
  connection,
  taskQueue: config.taskQueue,
  workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),
  plugins: [new AiSdkPlugin({ modelProvider: provider })],
  activities: {
    readFile: (rel) => readFile(path.join(config.workspace, rel), 'utf8'),
  },
  ...config.workerOptions,
});
const running = worker.run().finally(() => connection.close());
serve({
  shutdown: async () => {
    worker.shutdown();
    await running;
  },
});
await running;
process.exit(0);
