/** Names that backend services, the `temporal` CLI and the Temporal UI rely on. Changing one is a breaking change. */
export const DEFAULT_TASK_QUEUE = 'agent-runs';
export const WORKFLOW_TYPE = 'agentRun';
/** Keyword search attribute holding the run's state, upserted whenever the run waits in a new state. */
export const AGENT_STATE_SEARCH_ATTRIBUTE = 'AgentState';
/**
 * Memo field holding a copy of the run's state view, written when the run waits for a person and when it ends, so
 * that the server can answer `state` when no worker does.
 */
export const AGENT_STATE_MEMO = 'agentState';
/**
 * Memo field set when a run is started through `AgentClient.start`: what the run list shows and searches without
 * asking each run (`{ prompt, agent, origin }`, the prompt cut at 1,000 characters).
 */
export const AGENT_RUN_MEMO = 'agentRun';
/** Histogram of the time a run spent in each state (workflows/metrics.ts records it, observability/runtime.ts sets its buckets). */
export const STATE_DURATION_METRIC = 'agent_state_duration_ms';
