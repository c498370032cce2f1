/**
 * The client's entry, the package's `durable-agent-worker/client`: start, watch and steer agent runs from a backend service. Safe in a web backend: this
 * entry and everything it imports load no native module (no `@temporalio/worker`, core bridge or SQLite), which
 * test/package.test.ts checks in a fresh process.
 */

/** The client: `AgentClient.connect()` (TEMPORAL_* settings by default), `start`, `handle(id)`, `list`, `fork`. */
export { AgentClient, AgentRunHandle, agentDataConverter, diffState, DEFAULT_CONTROL_TIMEOUT_MS } from './client/index';
export type { RunListEntry, RunListFilter } from './client/run-list';
export type { AgentRunSummary, ConnectOptions, ControlOptions, ListOptions, SendMessageOptions, StartOptions, StateOptions, WatchEvent, WatchOptions } from './client/index';

/** The pushed stream `watch({ stream, after, onOffset })` reads: the Redis channel the workers publish to, offsets, the events (with `resume`). */
export { compareOffsets, RedisChannel, START } from './stream';
export type { Offset, RedisChannelOptions, StreamChannel } from './stream';
export { followText, type CallText, type StreamEvent } from './common/stream';

/** Errors the client throws, and helpers that unwrap why a run failed. */
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
  InvalidAgentInputError,
  failureReason,
  isAlreadyStarted,
  runFailure,
} from './client/index';
export type { RunFailure } from './client/index';

/** Memories across runs: `AgentClient.memory` (put, get, list, delete, search), its shapes as zod schemas, and the stores (docs/memory.md). */
export { AgentMemory, type MemoryCallOptions } from './client/index';
export {
  DEFAULT_MEMORY_NAMESPACE,
  MemoryDeletedSchema,
  MemoryListQuerySchema,
  MemoryListSchema,
  MemorySchema,
  MemorySearchHitSchema,
  MemorySearchQuerySchema,
  MemorySearchResultSchema,
  MemoryWriteSchema,
} from './common/memory';
export type { Memory, MemoryList, MemoryListQuery, MemorySearchHit, MemorySearchQuery, MemoryWrite } from './common/memory';
export { openMemoryStore, type MemoryScope, type MemoryStore, type MemoryStoreSettings } from './memory';
export { memorySettings, type MemorySettings } from './config';
/** Schedules (`AgentClient.schedules`): agent runs on a cron expression or an interval, over Temporal Schedules. */
export { AgentSchedules } from './client/index';
export type { CreateScheduleOptions, ListSchedulesOptions } from './client/index';
export { CreateScheduleInputSchema, OVERLAP_POLICIES, ScheduleListEntrySchema, ScheduleViewSchema } from './common/schedule';
export type { CreateScheduleInput, OverlapPolicy, ScheduleListEntry, ScheduleView } from './common/schedule';

/** Time travel's answers: `AgentRunHandle.steps()` and `diff(from, to)`. */
export type { DiffEntry, SnapshotDiff, StepRecord } from './client/time-travel';
/** What-if forks: `AgentClient.fork`'s `edits` and `replay`. */
export type { ForkEdits, WhatIfOptions } from './client/fork';

/** A run's input, its result and the view its `state` query answers (fields are added, never removed, in a major version). */
export type { AgentRunInput, ApproveInput, Critique, RunTimeouts, RunTimeoutsInput } from './common/input';
export { DEFAULT_TIMEOUTS } from './common/input';
export type { AgentRunResult, ApproveResult, ControlResult, SendMessageResult } from './common/messages';
export type { ControlRecord, PendingApproval, PlanStep, PlanStepStatus, RunStateView, RunUsage, TransitionRecord } from './common/view';
export { ActorSchema, SERVICE_ACTOR, type Actor } from './common/actor';
/** A tenant's fairness key on Temporal's task queues, as `AgentClient.start` sets it: for weights set on the task queue. */
export { BACKGROUND_PRIORITY, backgroundTaskQueue, fairnessKeyOf, temporalPriorityKey } from './common/fairness';
/** A tenant's burst of starts at its own priority (`ConnectOptions.tenantBurst`, AGENT_TENANT_BURST; docs/quota.md). */
export { TenantBurst, type TenantBurstOptions } from './client/tenant-burst';
export { AgentState, isTerminal } from './common/states';

/** Where Temporal is, for `AgentClient.connect(settings)`; unset fields come from the environment. */
export type { CodecSettings, TemporalSettings } from './config';
export { codecSettings, temporalSettings } from './config';

/** For a `Connection` this package does not open: a call waiting to retry when it closes is rejected, not thrown from a timer. */
export { closeSafeConnectionPlugin, closeSafeInterceptors, closedChannelGuard } from './config/connection';
