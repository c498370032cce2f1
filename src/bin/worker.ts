#!/usr/bin/env node
/**
 * The worker process: `npm run worker` (`node dist/bin/worker.js` in the image). Polls the `agent-runs` task queue
 * until SIGINT or SIGTERM; with no LLM_API_KEY and no LLM_BASE_URL it serves the scripted model and says so.
 */
// First, so that the SDK loads before source maps are on (source-maps.ts).
import './source-maps';
import { workerConfig } from '../config';
import { installWorkerRuntime } from '../observability/runtime';
import { BACKGROUND_WORKFLOW_TASK_SLOTS, createAgentWorker } from '../worker';
import { backgroundTaskQueue } from '../common/fairness';
import { tuneWorkerHeap } from '../worker/heap';

async function main(): Promise<void> {
  const config = workerConfig(process.env);
  tuneWorkerHeap(config.heapGrowingPercent);
  // Logs (AGENT_LOG_FORMAT, AGENT_LOG_LEVEL) and Prometheus metrics (AGENT_METRICS_PORT), before any connection.
  const { say } = installWorkerRuntime(config.observability);
  const agent = await createAgentWorker({ config });
  const { temporal, observability, codecs } = config;
  const { handedBack, failed } = agent.recovered;
  if (handedBack.length) {
    say(`worker: handed back ${handedBack.length} activity attempt(s) that a crashed worker process on this host left in flight; the server retries them now (${handedBack.map((o) => `${o.activityType} of ${o.workflowId}`).join(', ')})`);
  }
  for (const { orphan, error } of failed) say(`worker: could not hand back ${orphan.activityType} of ${orphan.workflowId} (${error}); it is retried at its heartbeat timeout`);
  if (agent.scriptedModelUrl) {
    say(`worker: no LLM_API_KEY or LLM_BASE_URL, so runs use the scripted model at ${agent.scriptedModelUrl} (offline demo, not a real LLM)`);
  }
  for (const server of agent.mcpServers) say(`worker: MCP server ${server.name} gives the tools ${server.tools.join(', ') || '(none)'}`);
  if (observability.tracing !== 'off') say(`worker: tracing on (${observability.tracing})`);
  if (observability.metricsBindAddress) say(`worker: Prometheus metrics on http://${observability.metricsBindAddress}/metrics`);
  say(`worker: polling task queue ${temporal.taskQueue} on ${temporal.address} (namespace ${temporal.namespace}), default model ${agent.model}`);
  const backgroundSlots = agent.config.backgroundTaskSlots ?? BACKGROUND_WORKFLOW_TASK_SLOTS;
  if (backgroundSlots > 0) say(`worker: background runs (priority 8 and 9) on task queue ${backgroundTaskQueue(temporal.taskQueue)}, ${backgroundSlots} workflow tasks at once (AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS)`);
  if (codecs.claimCheck.enabled) say(`worker: large payloads go to the blob store at ${codecs.claimCheck.blobDir} (AGENT_CLAIM_CHECK=off keeps them inline)`);
  const keys = codecs.encryption;
  if (keys) say(`worker: payloads encrypted with key ${keys.currentKeyId} (${Object.keys(keys.keys).length} keys configured; see docs/security.md)`);
  await agent.run(); // the SDK shuts the worker down on SIGINT and SIGTERM; run() closes what the worker opened
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
