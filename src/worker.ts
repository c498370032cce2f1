/**
 * The worker's entry: `createAgentWorker(options)` starts a Temporal worker that runs agent runs, with the model, the
 * tools and the settings not given read from the environment. The worker's parts (options, bundles, the plugin,
 * crash recovery) sit behind it in src/worker/; src/index.ts is the package's worker-side surface.
 */
export { createAgentWorker, resolveWorkerConfig, agentWorkerOptions, openAIClient, BACKGROUND_WORKFLOW_TASK_SLOTS, DEFAULT_MODEL, SHUTDOWN_GRACE_TIME } from './worker/worker';
export type { AgentWorker, AgentWorkerOptions, ConnectionSettings, ModelOptions } from './worker/worker';
/** What `AgentWorkerOptions` takes for its `critics` and `hooks`. */
export type { Critic, CriticContext, CriticDecision } from './activities/custom-critic';
export type { RunEnd, RunHooks, RunTransition } from './stream/hooks';
