/** The machine's events, commands and result: tagged unions the workflow and the machine share. */
import type { CompactionRequest, CompactionResult, CritiqueRequest, ModelRequest, ModelResponse, ToolRequest, ToolResult, Usage } from '../common/chat';
import type { Actor } from '../common/actor';
import type { CritiqueDecision } from '../common/view';
import type { RunSnapshot } from './snapshot';

export type AgentEvent =
  | { type: 'START' }
  | { type: 'INVALID_INPUT'; error: string }
  | { type: 'PLAN_READY'; response: ModelResponse }
  | { type: 'MODEL_RESPONDED'; response: ModelResponse }
  | { type: 'MODEL_FAILED'; error: string }
  /** The model in use is gone, refuses the keys, or has spent its quota or retries: the next `fallbackModels` takes over. */
  | { type: 'MODEL_UNAVAILABLE'; error: string }
  /** The worker refused the model call before any request: the run names tools its registry lacks. */
  | { type: 'UNKNOWN_TOOLS'; error: string }
  | { type: 'CONTEXT_OVERFLOW'; error: string }
  /** The worker cannot read the chained conversation back: the call is made again with every message. */
  | { type: 'CHAIN_UNAVAILABLE'; error: string }
  /** Internal: resolved inside the transition that enters PROCESSING (see `internalEvent`). */
  | { type: 'PROCESS' }
  /** Internal: every call an approval wait holds is decided; its move is recorded under `after`, the event that decided the last. */
  | { type: 'DECIDED'; after?: 'APPROVAL' | 'INTERRUPT' }
  | { type: 'TOOLS_DONE'; results: ToolResult[] }
  /** `replayed`: a what-if fork's model critic answered with the decision the original's got for the same request. */
  | { type: 'CRITIQUE_DONE'; decision: CritiqueDecision; usage?: Usage; replayed?: true }
  /** The model critic could not judge (its provider failed, its answer was no decision): the rule critic decides. */
  | { type: 'CRITIC_FAILED'; error: string }
  | { type: 'COMPACTED'; result: CompactionResult }
  | { type: 'COMPACTION_FAILED'; error: string }
  /**
   * The controls (`by`: who sent it, absent: the service; the run records it, `controls`).
   * `arguments`: approve with these instead of the model's (they must pass the tool's schema).
   */
  | { type: 'APPROVAL'; toolCallId: string; approved: boolean; feedback?: string; arguments?: Record<string, unknown>; by?: Actor }
  | { type: 'PAUSE'; by?: Actor }
  | { type: 'RESUME'; by?: Actor }
  /** `cut`: the text the model call in flight had streamed when the interpreter stopped it (its cancellation's details). */
  | { type: 'ABORT'; reason?: string; by?: Actor; cut?: CutText }
  | { type: 'TIMEOUT' }
  | { type: 'MESSAGE'; text: string; by?: Actor }
  /** A message that stops the work in flight for it (sendMessage with `interrupt`; see `interrupt`). */
  | { type: 'INTERRUPT'; text: string; by?: Actor; cut?: CutText }
  | { type: 'CLOSE' }
  /** The fleet's provider budget had no room for the model call yet: it is asked again (no retry is spent). */
  | { type: 'QUOTA_WAIT'; waitMs: number; position: number; queuedAt: number };
export type AgentEventType = AgentEvent['type'];

/**
 * What a stopped model call had streamed: the interpreter reads it from the call's cancellation (or its last heartbeat)
 * and hands it over with the ABORT or INTERRUPT that stopped it, once per call, never as a stream of events.
 */
export interface CutText {
  callNumber: number;
  text: string;
}

/**
 * Effects for the interpreter, with their activity requests built. Waiting states (AWAITING_APPROVAL, PAUSED) emit
 * no work: they wait for events. `timer` keeps the run's one timer on the earliest of its clocks (null: none).
 */
export type AgentCommand =
  | { type: 'callModel'; request: ModelRequest }
  /** `concurrent`: the run's `toolOrder: 'concurrent'`, all at once; absent: in the model's order (common/tool-order.ts). */
  | { type: 'runTools'; requests: ToolRequest[]; concurrent?: true }
  /** Runs with the critic's own time bound: a slow critic is replaced by the rules. */
  | { type: 'critique'; request: CritiqueRequest }
  | { type: 'compact'; request: CompactionRequest }
  /** A COMPLETED run keeps its conversation open for a follow-up message for `ms`, then closes it. */
  | { type: 'awaitMessage'; ms: number }
  | { type: 'timer'; due: string | null }
  | { type: 'cancelWork' }
  /** Stop the running tool calls that may be stopped (`ToolCall.cancellable`); the others are awaited. */
  | { type: 'interruptTools' };
export type WorkCommand = Exclude<AgentCommand, { type: 'timer' | 'cancelWork' | 'interruptTools' }>;

export type TransitionResult =
  | { ok: true; snapshot: RunSnapshot; commands: AgentCommand[] }
  | { ok: false; error: string };
