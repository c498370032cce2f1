/** State names are what users see in the `state` query, the `AgentState` search attribute and the UI. */
export const AgentState = {
  IDLE: 'IDLE',
  PLANNING: 'PLANNING',
  STREAMING: 'STREAMING',
  PROCESSING: 'PROCESSING',
  TOOL_EXECUTING: 'TOOL_EXECUTING',
  AWAITING_APPROVAL: 'AWAITING_APPROVAL',
  CRITIQUE: 'CRITIQUE',
  COMPACTING: 'COMPACTING',
  PAUSED: 'PAUSED',
  COMPLETED: 'COMPLETED',
  FAILED: 'FAILED',
  ABORTED: 'ABORTED',
} as const;
export type AgentState = (typeof AgentState)[keyof typeof AgentState];

export const TERMINAL_STATES: readonly AgentState[] = [AgentState.COMPLETED, AgentState.FAILED, AgentState.ABORTED];
export const isTerminal = (state: AgentState): boolean => TERMINAL_STATES.includes(state);

/** States that start new work; a requested pause takes effect on the way into one of them. */
export const WORK_STATES: readonly AgentState[] = [
  AgentState.PLANNING,
  AgentState.STREAMING,
  AgentState.TOOL_EXECUTING,
  AgentState.COMPACTING,
];

/**
 * States whose work runs as an activity, which may be retrying (the client then reads the retries). Not WORK_STATES:
 * CRITIQUE runs the critic activity, but a pause does not wait for it.
 */
export const ACTIVITY_STATES: readonly AgentState[] = [...WORK_STATES, AgentState.CRITIQUE];

export const CritiqueAction = { CONTINUE: 'continue', RETRY: 'retry', REPLAN: 'replan', COMPLETE: 'complete' } as const;
export type CritiqueAction = (typeof CritiqueAction)[keyof typeof CritiqueAction];
