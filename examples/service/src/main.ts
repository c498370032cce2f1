/**
 * One process for the example: the agent worker and the HTTP API. In production they are usually two deployments (the
 * worker scaled on its own); both read TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE and the rest from the environment.
 */
import { createAgentWorker } from 'durable-agent-worker';
import { AgentClient } from 'durable-agent-worker/client';
import { buildApp } from './app';
import { getWeather } from './tools';

async function main(): Promise<void> {
  const worker = await createAgentWorker({ tools: [getWeather] });
  // Polls until SIGINT or SIGTERM, which the Temporal SDK handles: runs in flight get a grace period to finish.
  const running = worker.run();
  const agents = await AgentClient.connect();
  const app = buildApp(agents);
  try {
    await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
    await running;
  } finally {
    await app.close();
    await agents.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
