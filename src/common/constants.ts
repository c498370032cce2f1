/** Names that backend services, the `temporal` CLI and the Temporal UI rely on. Changing one is a breaking change. */
export const DEFAULT_TASK_QUEUE = 'agent-runs';
export const WORKFLOW_TYPE = 'agentRun';
/** Keyword search attribute holding the run's state, upserted whenever the run waits in a new state. */
export const AGENT_STATE_SEARCH_ATTRIBUTE = 'AgentState';
/**
 * Keyword search attribute holding the tenant a run belongs to, set when the gateway starts it for a signed identity
 * and passed on to its children, forks and continuations; every list of the gateway filters on it. Unset: no tenant
 * (a run the service started), seen only by the service.
 */
export const AGENT_TENANT_SEARCH_ATTRIBUTE = 'AgentTenant';
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
/** Memo field of a run that has an owner: `{ tenant, startedBy }` (the `sub` of whoever started it, or of its root run). */
export const AGENT_OWNER_MEMO = 'agentOwner';
/** Histogram of the time a run spent in each state (workflows/metrics.ts records it, observability/runtime.ts sets its buckets). */
export const STATE_DURATION_METRIC = 'agent_state_duration_ms';
/**
 * Memo field of an agent schedule (a Temporal Schedule whose action starts `agentRun`): its spec as given
 * (`{ cron, intervalMs, offsetMs }`: the server keeps a cron only compiled into calendars) and the prompt and agent
 * its list shows.
 */
export const AGENT_SCHEDULE_MEMO = 'agentSchedule';
/** Temporal's own keyword search attribute on a run a schedule started: the schedule's id. */
export const SCHEDULED_BY_SEARCH_ATTRIBUTE = 'TemporalScheduledById';
