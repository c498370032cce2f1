/**
 * Child process of figure (h): the product's worker as src/bin/worker.ts starts it (its heap tuning, its runtime, then
 * `createAgentWorker` over the environment), in a process of its own so that its RSS is its own. It also answers the
 * driver with its sticky cache's size, which the SDK derives from the heap limit and no log line states.
 */
import { workerConfig } from '../../src/config';
import { installWorkerRuntime } from '../../src/observability/runtime';
import { createAgentWorker } from '../../src/worker';
import { tuneWorkerHeap } from '../../src/worker/heap';
import { serve } from './serve';

async function main(): Promise<void> {
  const config = workerConfig(process.env);
  tuneWorkerHeap(config.heapGrowingPercent);
  installWorkerRuntime(config.observability);
  const agent = await createAgentWorker({ config });
  const running = agent.run();
  serve({ cacheSize: () => agent.worker.options.maxCachedWorkflows });
  await running; // the SDK shuts the worker down on SIGTERM, which the driver sends
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
