/**
 * Typed client of `agentRun` workflows for backend services: start runs, read their state, steer them, wait for them.
 * One module per job: agent-client.ts (connect, start, fork, list), handle.ts (one run), watch.ts, listing.ts,
 * fork.ts, errors.ts. src/client.ts, beside this folder, is the client's entry and the package's `durable-agent-worker/client`;
 * the CLI (src/cli/) is a thin shell over that entry.
 */
export { AgentClient, agentDataConverter, type ConnectOptions, type StartOptions } from './agent-client';
export { AgentRunHandle, DEFAULT_CONTROL_TIMEOUT_MS, type ControlOptions, type SendMessageOptions, type StateOptions } from './handle';
export { AgentMemory, type MemoryCallOptions } from './memory';
export { diffState, type WatchEvent, type WatchOptions } from './watch';
export { AgentSchedules, type CreateScheduleOptions, type ListSchedulesOptions } from './schedules';
export { executionStatus, rawExecutions, type AgentRunSummary, type ListOptions } from './listing';
export {
  AgentControlTimeoutError,
  AgentQueryTimeoutError,
  AgentRunEndedError,
  AgentRunFailedError,
  AgentRunNotFoundError,
  AgentScheduleExistsError,
  AgentScheduleNotFoundError,
  AgentStepNotFoundError,
  AgentUpdateRejectedError,
  failureReason,
  InvalidAgentInputError,
  isAlreadyStarted,
  runFailure,
  type RunFailure,
} from './errors';
