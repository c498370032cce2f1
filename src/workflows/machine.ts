/**
 * The agent run as a pure state machine: `transition(snapshot, event, now) -> { snapshot, commands }`.
 * No Temporal import, no await, no clock, no randomness: the workflow interprets the commands and feeds
 * their outcomes back as events. Every state change is appended to the snapshot's transition log.
 */
import type { ChatMessage, CompactionRequest, CompactionResult, CritiqueRequest, ModelRequest, ModelResponse, ToolCall, ToolRequest, ToolResult, Usage } from '../common/chat';
import { addUsage } from '../common/chat';
import {
  describeRepetition,
  findRepetition,
  isLoopLimitReached,
  isStuckInSetbacks,
  isToolCallLimitReached,
  nearLimit,
  needsApproval,
  toolSignature,
} from './guards';
import { budgetExceeded, contextWouldOverflow } from './budget';
import { childRequest, childrenEnded, childrenStarted } from './children';
import { chainAfter, chained } from './chain';
import { addMs, movedClocks, timerDue } from './clocks';
import { ruleCritique } from './critic';
import { compactionRequest, critiqueRequest, modelRequest } from './requests';
import { calibrated, confident, CONTINUE_PROMPT, continued, lastAssistantText, withResponseUsage, withSideUsage } from './responses';
import type { ModelStep, PendingApproval, Phase, RunSnapshot, WorkPhase } from './snapshot';
import type { ToolCallRecord } from '../common/view';
import { FailureType, ModelErrorType } from '../common/failures';
import { argumentsProblem } from '../common/input';
import { AgentState, CritiqueAction, type CritiqueDecision, isTerminal, WORK_STATES } from '../common/states';
import { machineDefinition, type MachineDefinition } from './machine/versions';

export { CONTINUE_PROMPT } from './responses';
export { freshClocks, timerDue } from './clocks';
export { LATEST_MACHINE_VERSION, MACHINE_VERSIONS, machineDefinition, versionBefore, versionOfPatches, type MachineDefinition } from './machine/versions';

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
  | { type: 'TOOLS_DONE'; results: ToolResult[] }
  | { type: 'CRITIQUE_DONE'; decision: CritiqueDecision; usage?: Usage }
  /** The model critic could not judge (its provider failed, its answer was no decision): the rule critic decides. */
  | { type: 'CRITIC_FAILED'; error: string }
  | { type: 'COMPACTED'; result: CompactionResult }
  | { type: 'COMPACTION_FAILED'; error: string }
  /** `arguments`: approve with these instead of the model's (they must pass the tool's schema). */
  | { type: 'APPROVAL'; toolCallId: string; approved: boolean; feedback?: string; arguments?: Record<string, unknown> }
  | { type: 'PAUSE' }
  | { type: 'RESUME' }
  | { type: 'ABORT'; reason?: string }
  | { type: 'TIMEOUT' }
  | { type: 'MESSAGE'; text: string }
  /** A message that stops the work in flight for it (sendMessage with `interrupt`; see `interrupt`). */
  | { type: 'INTERRUPT'; text: string }
  | { type: 'CLOSE' }
  | { type: 'STREAM_DELTA'; callNumber: number; attempt: number; text: string }
  /** The fleet's provider budget had no room for the model call yet: it is asked again (no retry is spent). */
  | { type: 'QUOTA_WAIT'; waitMs: number; position: number; queuedAt: number };
export type AgentEventType = AgentEvent['type'];

/**
 * Effects for the interpreter, with their activity requests built. Waiting states (AWAITING_APPROVAL, PAUSED) emit
 * no work: they wait for events. `timer` keeps the run's one timer on the earliest of its clocks (null: none).
 */
export type AgentCommand =
  | { type: 'callModel'; request: ModelRequest }
  | { type: 'runTools'; requests: ToolRequest[] }
  /** `critic`: the critic's own time bound (a slow critic is replaced by the rules); `modelCall`: runs begun before it. */
  | { type: 'critique'; request: CritiqueRequest; timeouts: 'critic' | 'modelCall' }
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

const S = AgentState;
type Targets = Partial<Record<AgentEventType, readonly AgentState[]>>;

/** Events every running state accepts; a `self` target keeps the state (a request is recorded, nothing moves). */
const whileRunning = (self: AgentState): Targets => ({
  ABORT: [S.ABORTED],
  TIMEOUT: [S.FAILED],
  PAUSE: [self],
  RESUME: [self],
  MESSAGE: [self],
  // Queued as a MESSAGE is, where no work can be stopped for it; the states below that can say where it leads.
  INTERRUPT: [self],
  STREAM_DELTA: [self],
});

/**
 * Where the way into a model step can lead instead: a requested pause, the budget's approval, a limit, or a
 * compaction first when the request would fill too much of the model's context window.
 */
const MODEL_STEP_DETOURS = [S.PAUSED, S.AWAITING_APPROVAL, S.FAILED, S.COMPLETED, S.COMPACTING] as const;

/** The transition table: for each state, the events it accepts and the states each may lead to. */
export const TRANSITIONS: Readonly<Record<AgentState, Targets>> = {
  IDLE: { ...whileRunning(S.IDLE), START: [S.PLANNING, S.STREAMING, ...MODEL_STEP_DETOURS], INVALID_INPUT: [S.FAILED] },
  PLANNING: {
    ...whileRunning(S.PLANNING),
    PLAN_READY: [S.STREAMING, ...MODEL_STEP_DETOURS],
    CONTEXT_OVERFLOW: [S.COMPACTING, S.PAUSED, S.FAILED],
    MODEL_FAILED: [S.FAILED],
    MODEL_UNAVAILABLE: [S.PLANNING, ...MODEL_STEP_DETOURS],
    UNKNOWN_TOOLS: [S.FAILED],
    QUOTA_WAIT: [S.PLANNING, S.PAUSED],
    PAUSE: [S.PLANNING, S.PAUSED],
    INTERRUPT: [S.PLANNING, ...MODEL_STEP_DETOURS],
  },
  STREAMING: {
    ...whileRunning(S.STREAMING),
    MODEL_RESPONDED: [S.PROCESSING],
    CONTEXT_OVERFLOW: [S.COMPACTING, S.PAUSED, S.FAILED],
    CHAIN_UNAVAILABLE: [S.STREAMING],
    MODEL_FAILED: [S.FAILED],
    MODEL_UNAVAILABLE: [S.STREAMING, ...MODEL_STEP_DETOURS],
    UNKNOWN_TOOLS: [S.FAILED],
    QUOTA_WAIT: [S.STREAMING, S.PAUSED],
    PAUSE: [S.STREAMING, S.PAUSED],
    INTERRUPT: [S.STREAMING, ...MODEL_STEP_DETOURS],
  },
  PROCESSING: {
    ...whileRunning(S.PROCESSING),
    // COMPLETED: an answer still cut off by the output limit after its continuations ends the run as it is.
    PROCESS: [S.TOOL_EXECUTING, S.AWAITING_APPROVAL, S.CRITIQUE, S.STREAMING, S.COMPLETED, ...MODEL_STEP_DETOURS],
  },
  TOOL_EXECUTING: { ...whileRunning(S.TOOL_EXECUTING), TOOLS_DONE: [S.CRITIQUE] },
  AWAITING_APPROVAL: {
    ...whileRunning(S.AWAITING_APPROVAL),
    APPROVAL: [S.AWAITING_APPROVAL, S.TOOL_EXECUTING, S.PLANNING, S.STREAMING, ...MODEL_STEP_DETOURS],
    // The calls still waiting are rejected; a wait for the budget keeps waiting, with the message queued.
    INTERRUPT: [S.AWAITING_APPROVAL, S.TOOL_EXECUTING, S.PAUSED],
    // The reminder keeps the state; `approval.onTimeout: 'reject'` goes on as a decision would.
    TIMEOUT: [S.FAILED, S.AWAITING_APPROVAL, S.TOOL_EXECUTING, S.PAUSED],
  },
  CRITIQUE: {
    ...whileRunning(S.CRITIQUE),
    CRITIQUE_DONE: [S.STREAMING, S.PLANNING, S.COMPLETED, ...MODEL_STEP_DETOURS],
    CRITIC_FAILED: [S.STREAMING, S.PLANNING, S.COMPLETED, ...MODEL_STEP_DETOURS],
  },
  COMPACTING: {
    ...whileRunning(S.COMPACTING),
    COMPACTED: [S.STREAMING, S.PLANNING, S.PAUSED, S.AWAITING_APPROVAL, S.FAILED, S.COMPLETED],
    COMPACTION_FAILED: [S.FAILED],
  },
  PAUSED: {
    ABORT: [S.ABORTED],
    // ABORTED: paused longer than limits.maxPausedMs.
    TIMEOUT: [S.FAILED, S.ABORTED],
    RESUME: [S.PLANNING, S.STREAMING, S.TOOL_EXECUTING, S.COMPACTING, S.AWAITING_APPROVAL, S.FAILED, S.COMPLETED],
    MESSAGE: [S.PAUSED],
    INTERRUPT: [S.PAUSED],
    STREAM_DELTA: [S.PAUSED],
  },
  // Terminal, unless the run keeps the conversation open for a follow-up message (keepOpenMs).
  COMPLETED: { MESSAGE: [S.STREAMING, ...MODEL_STEP_DETOURS], INTERRUPT: [S.STREAMING, ...MODEL_STEP_DETOURS], CLOSE: [S.COMPLETED] },
  FAILED: {},
  ABORTED: {},
};

/** Own properties only: an event named like an Object.prototype member (`constructor`) has no transition either. */
export const allowedTargets = (state: AgentState, event: AgentEventType): readonly AgentState[] => {
  const targets = Object.hasOwn(TRANSITIONS, state) ? TRANSITIONS[state] : {};
  return (Object.hasOwn(targets, event) && targets[event]) || [];
};

/** Text the model is given in place of a call that the repetition guard stopped. */
export const LOOP_WARNING =
  'Not executed: this repeats your earlier calls without progress. Use the results you already have or try a different approach; repeating it again ends the run.';

/** How many recent messages compaction keeps verbatim in runs begun before `compaction.keepRecentMessages`. */
export const KEEP_RECENT_MESSAGES = 6;

/** Text the model is given in place of tool calls whose response the output limit cut off. */
export const CUT_TOOL_CALL =
  'Not executed: your response was cut off by the output limit before this tool call was complete. Call it again with shorter arguments.';


/** The user turn that tells the model, once, that the run is close to a limit. */
export const wrapUpNote = (near: string) => `You are close to this run's limits (${near}). Conclude now: give your best answer with what you already have.`;

/** The user turn after a tool step the model critic asked to try again, before its reason. */
export const TOOL_RETRY_NOTE = 'A reviewer judged your last tool calls and asks for another attempt: ';

/** How many times an answer cut off by the output limit is continued before the run ends with it as it is. */
export const MAX_CONTINUATIONS = 3;

/**
 * Apply one event, and then the internal steps it leads to (processing a response, the rule critic) in the same
 * macrostep: every state change is in the transition log, but the commands are only the effects the interpreter
 * must run. An event the current state has no transition for is rejected, never ignored. `stopAtStep` ends the
 * macrostep early, at that step (time travel to a step inside it).
 */
export function transition(s: RunSnapshot, event: AgentEvent, now: string, stopAtStep = Infinity): TransitionResult {
  const first = microstep(s, event, now);
  if (!first.ok) return first;
  let next = first.snapshot;
  const commands = [...first.commands];
  for (let internal = internalEvent(next); internal && next.step < stopAtStep; internal = internalEvent(next)) {
    const result = microstep(next, internal, now);
    if (!result.ok) throw new Error(`machine bug: internal ${internal.type} refused in ${next.phase.type}: ${result.error}`);
    next = result.snapshot;
    commands.push(...result.commands);
  }
  const due = timerDue(next);
  return ok(next, due === timerDue(s) ? commands : [{ type: 'timer', due }, ...commands]);
}

/** The run awaits a follow-up message in a kept-open conversation. */
export const awaitsMessage = (s: RunSnapshot): boolean => s.phase.type === S.COMPLETED && s.phase.conversationOpen;

/** The run has work ahead or may still take a follow-up message. */
export const isRunning = (s: RunSnapshot): boolean => !isTerminal(s.phase.type) || awaitsMessage(s);

/** The decisions the run waits for; none outside AWAITING_APPROVAL. */
export const undecided = (s: RunSnapshot) => (s.phase.type === S.AWAITING_APPROVAL ? s.phase.pending.filter((p) => !p.decision) : []);

/** The event a state resolves with at once, with no effect to wait for; null for states that wait. */
export function internalEvent(s: RunSnapshot): AgentEvent | null {
  if (s.phase.type === S.PROCESSING) return { type: 'PROCESS' };
  if (s.phase.type === S.CRITIQUE && critiqueMode(s) === 'rules') return { type: 'CRITIQUE_DONE', decision: ruleCritique(s) };
  return null;
}

/** The run's machine version: the one record of behaviour the machine reads. */
const version = (s: RunSnapshot): MachineDefinition => machineDefinition(s.machineVersion);

/** Who judges a step, by machine version: the chosen critic judges answers, and tool steps too (`toolStepsToo`); else the rules judge tool steps. */
const CRITIC = {
  answersOnly: (s: RunSnapshot) => (s.lastToolResults.length === 0 ? s.options.critique : 'rules'),
  toolStepsToo: (s: RunSnapshot) => s.options.critique,
} as const;
const critiqueMode = (s: RunSnapshot): 'rules' | 'model' => CRITIC[version(s).critic](s);

/** One state's handling of one event, checked against the table. */
function microstep(s: RunSnapshot, event: AgentEvent, now: string): TransitionResult {
  const state = s.phase.type;
  const targets = allowedTargets(state, event.type);
  if (targets.length === 0) {
    if (isTerminal(state)) return reject(`the run has ended (${state})`);
    if (event.type === 'APPROVAL') return reject(`the run is ${state}, not AWAITING_APPROVAL`);
    return reject(`event ${event.type} has no transition from state ${state}`);
  }
  const result = handle(s, event, now);
  const to = result.ok ? result.snapshot.phase.type : state;
  if (to !== state && !targets.includes(to)) {
    // The handlers and the table disagree: a bug in this file, caught by the table-driven tests.
    throw new Error(`machine bug: ${state} --${event.type}--> ${to} is not in the table`);
  }
  return result;
}

/**
 * The event a failed model call becomes: a context overflow leads to compaction, an unreadable chain to the same
 * call with every message, anything else (already retried by the activity's policy) ends the run.
 */
export function modelFailure(errorType: string | undefined, error: string): AgentEvent {
  if (errorType === ModelErrorType.ContextOverflow) return { type: 'CONTEXT_OVERFLOW', error };
  if (errorType === FailureType.ConversationUnavailable) return { type: 'CHAIN_UNAVAILABLE', error };
  if (errorType === FailureType.UnknownTool) return { type: 'UNKNOWN_TOOLS', error };
  if (errorType && (MODEL_UNAVAILABLE as readonly string[]).includes(errorType)) return { type: 'MODEL_UNAVAILABLE', error };
  return { type: 'MODEL_FAILED', error };
}

/** Failures that no retry of the same model mends, and another model may: the model's, its key's, its quota's. */
const MODEL_UNAVAILABLE = [
  ModelErrorType.NotFound,
  ModelErrorType.Authentication,
  ModelErrorType.PermissionDenied,
  ModelErrorType.QuotaExceeded,
  ModelErrorType.RetriesExhausted,
] as const;

/** Keep the rejection on the snapshot so that the `state` query shows it. */
export function recordRejection(s: RunSnapshot, event: AgentEvent, error: string, now: string): RunSnapshot {
  const entry = { event: event.type, state: s.phase.type, at: now, error };
  return { ...s, rejectedEvents: [...s.rejectedEvents, entry].slice(-20) };
}

const ok = (snapshot: RunSnapshot, commands: AgentCommand[] = []): TransitionResult => ({ ok: true, snapshot, commands });
/** A phase that carries no data of its own. */
const plain = <T extends Exclude<AgentState, typeof S.AWAITING_APPROVAL | typeof S.PAUSED | typeof S.COMPACTING | typeof S.COMPLETED>>(type: T) => ({ type });
const reject = (error: string): TransitionResult => ({ ok: false, error });

function handle(s: RunSnapshot, e: AgentEvent, now: string): TransitionResult {
  switch (e.type) {
    case 'START':
      return enter({ ...s, deadline: addMs(now, s.limits.timeoutMs) }, plain(s.options.plan ? S.PLANNING : S.STREAMING), e, now);

    case 'INVALID_INPUT':
      return fail(s, e, now, e.error);

    case 'PLAN_READY': {
      const plan = e.response.text.trim();
      const next = withResponseUsage({ ...s, ...calibrated(s, e.response), plan, overflowsInARow: 0, partialText: e.response.text }, e.response);
      next.messages = [
        ...s.messages,
        { role: 'assistant', content: `Plan:\n${plan}` },
        { role: 'user', content: 'Carry out the plan step by step.' },
      ];
      return enter(next, plain(S.STREAMING), e, now);
    }

    case 'MODEL_RESPONDED': {
      const { text, toolCalls } = e.response;
      const next = withResponseUsage(
        { ...s, ...calibrated(s, e.response), chain: chainAfter(s, e.response), pendingToolCalls: toolCalls, lastToolResults: [], overflowsInARow: 0, partialText: text },
        e.response,
      );
      next.messages = [
        ...s.messages,
        { role: 'assistant', content: text || null, ...(toolCalls.length ? { toolCalls } : {}) },
      ];
      Object.assign(next, CUT_OFF[version(s).cutOffAnswers].continued(s, e.response));
      return enter(next, plain(S.PROCESSING), e, now);
    }

    case 'MODEL_FAILED':
      return fail(s, e, now, `model call failed: ${e.error}`);

    case 'MODEL_UNAVAILABLE':
      return MODEL_UNAVAILABLE_HANDLING[version(s).modelUnavailable](s, e, now);

    case 'UNKNOWN_TOOLS':
      return UNKNOWN_TOOLS[version(s).unknownTools](s, e, now);

    case 'CHAIN_UNAVAILABLE': {
      // This worker cannot read the chain back: send everything, and start a new chain.
      const next: RunSnapshot = { ...s, chain: null, partialText: '' };
      return ok(next, commandsFor(next));
    }

    case 'QUOTA_WAIT': {
      if (s.pauseRequested) return ok(pausedBeforeCall(s, e, now));
      const quotaWait = { queuedAt: e.queuedAt, since: s.quotaWait?.since ?? now, expectedAt: addMs(now, e.waitMs), position: e.position };
      const next: RunSnapshot = { ...s, quotaWait };
      return ok(next, commandsFor(next));
    }

    case 'CONTEXT_OVERFLOW':
      if (s.overflowsInARow >= 2) {
        return fail(s, e, now, `context still too long after ${s.overflowsInARow} compactions: ${e.error}`);
      }
      return enter({ ...s, lastError: e.error, overflowsInARow: s.overflowsInARow + 1 }, { type: S.COMPACTING, returnTo: s.phase.type as ModelStep }, e, now);

    case 'PROCESS':
      return processResponse(s, e, now);

    case 'TOOLS_DONE': {
      const byId = new Map([...s.presetResults, ...e.results].map((r) => [r.toolCallId, r]));
      const results = s.pendingToolCalls.map(
        (call): ToolResult =>
          byId.get(call.id) ?? { toolCallId: call.id, name: call.name, ok: false, content: 'Error: the tool returned no result.' },
      );
      const anyFailed = results.some(failed);
      const next: RunSnapshot = {
        ...s,
        toolLog: toolsEnded(s.toolLog, e.results, s.step + 1, now),
        toolCalls: s.toolCalls + e.results.length,
        lastToolResults: results,
        failuresInARow: anyFailed ? s.failuresInARow + 1 : 0,
        pendingToolCalls: [],
        presetResults: [],
        messages: [...s.messages, ...results.map((r) => ({ role: 'tool' as const, toolCallId: r.toolCallId, content: decisions(s).toolMessage(s, r) })), ...decisions(s).note(s)],
        approvalNote: null,
      };
      return enter(childrenEnded(next, e.results), plain(S.CRITIQUE), e, now);
    }

    case 'CRITIQUE_DONE': {
      const decision = CONFIDENCE[version(s).criticConfidence](e.decision, s.options.critiqueMinConfidence);
      return applyCritique({ ...withSideUsage(s, e.usage), lastCritique: decision }, e, now);
    }

    case 'CRITIC_FAILED': {
      const fallback = ruleCritique(s);
      return applyCritique({ ...s, lastCritique: { ...fallback, reason: `${fallback.reason} (model critic unavailable: ${e.error})` } }, e, now);
    }

    case 'COMPACTED': {
      const usage = COMPACTION_USAGE[version(s).compactionUsage](s, e.result.usage);
      // A proactive compaction leaves the calibration as it was: the ratio of tokens to characters still holds.
      const next: RunSnapshot = { ...s, messages: e.result.messages, usage, chain: null };
      return enter(next, plain(s.phase.type === S.COMPACTING ? s.phase.returnTo : S.STREAMING), e, now);
    }

    case 'COMPACTION_FAILED':
      return fail(s, e, now, `compaction failed: ${e.error}`);

    case 'APPROVAL': {
      const phase = s.phase;
      if (phase.type !== S.AWAITING_APPROVAL) return reject(`the run is ${phase.type}, not AWAITING_APPROVAL`);
      const pending = phase.pending.find((p) => p.toolCallId === e.toolCallId);
      if (!pending) {
        const waiting = phase.pending.filter((p) => !p.decision).map((p) => p.toolCallId);
        return reject(`toolCallId ${e.toolCallId} is not waiting for approval (waiting: ${waiting.join(', ') || 'none'})`);
      }
      if (pending.decision) return reject(`toolCallId ${e.toolCallId} was already ${pending.decision.approved ? 'approved' : 'rejected'}`);
      if (e.arguments !== undefined) {
        const problem = editProblem(pending, e.approved, e.arguments);
        if (problem) return reject(problem);
      }
      if (pending.kind === 'budget') {
        if (!e.approved) return fail(s, e, now, `${s.reason}; extending the budget was declined${e.feedback ? `: ${e.feedback}` : ''}`);
        const feedback = decisions(s).budgetFeedback(e.feedback);
        const told = feedback ? [{ role: 'user' as const, content: `The user approved going over the budget. Their feedback: ${feedback}` }] : [];
        return enter({ ...s, budgetGrants: s.budgetGrants + 1, messages: [...s.messages, ...told] }, phase.then, e, now);
      }
      const edited = e.arguments !== undefined ? { arguments: JSON.stringify(e.arguments) } : {};
      const decision = { approved: e.approved, ...(e.feedback !== undefined ? { feedback: e.feedback } : {}), ...edited };
      const decided = phase.pending.map((p) => (p === pending ? { ...p, decision } : p));
      if (decided.some((p) => !p.decision)) return ok({ ...s, phase: { ...phase, pending: decided } });
      const rejected = decided.filter((p) => !p.decision?.approved);
      // Approved with edited arguments: the call runs with them, marked so that the model is told.
      const editedArgs = new Map(decided.filter((p) => p.decision?.arguments !== undefined).map((p) => [p.toolCallId, p.decision!.arguments!]));
      const pendingToolCalls = s.pendingToolCalls.map((c) => (editedArgs.has(c.id) ? { ...c, arguments: editedArgs.get(c.id)!, edited: true as const } : c));
      const next: RunSnapshot = { ...s, pendingToolCalls, approvalNote: decisions(s).noteOf(decided) };
      next.presetResults = [
        ...s.presetResults,
        ...rejected.map((p) => ({ toolCallId: p.toolCallId, name: p.name, ok: false, content: decisions(s).rejected(p) })),
      ];
      return enter(next, phase.then, e, now);
    }

    case 'PAUSE':
      if (s.pauseRequested) return reject('a pause is already requested');
      // A call that only waits for the provider budget is given up at once (it has at most just started).
      if (s.quotaWait) return ok(pausedBeforeCall(s, e, now), [{ type: 'cancelWork' }]);
      return ok({ ...s, pauseRequested: true });

    case 'RESUME':
      if (s.phase.type !== S.PAUSED) {
        if (!s.pauseRequested) return reject(`the run is ${s.phase.type}, not paused`);
        return ok({ ...s, pauseRequested: false });
      }
      return enter(s, s.phase.resumeTo, e, now);

    case 'ABORT':
      return finish(s, S.ABORTED, e, now, `aborted: ${e.reason ?? 'by request'}`);

    case 'TIMEOUT':
      return TIMEOUTS[version(s).clocks](s, e, now);

    case 'MESSAGE': {
      const queued = { ...s, queuedMessages: [...s.queuedMessages, e.text] };
      if (s.phase.type !== S.COMPLETED) return ok(queued);
      return followUp(queued, e, now);
    }

    case 'INTERRUPT':
      return INTERRUPTS[version(s).interrupt](s, e, now);

    case 'CLOSE':
      if (s.phase.type !== S.COMPLETED || !s.phase.conversationOpen) return reject('the conversation is not open');
      return ok({ ...s, phase: { type: S.COMPLETED, conversationOpen: false } });

    case 'STREAM_DELTA': {
      // Deltas of a finished or earlier call arrive late after a retry or a crash; they no longer describe anything.
      if (s.phase.type !== S.STREAMING && s.phase.type !== S.PLANNING) return ok(s);
      if (!s.stream || e.callNumber !== s.stream.callNumber || e.attempt < s.stream.attempt) return ok(s);
      const restarted = e.attempt > s.stream.attempt;
      return ok({
        ...s,
        stream: { callNumber: e.callNumber, attempt: e.attempt },
        partialText: (restarted ? '' : s.partialText) + e.text,
      });
    }

    default:
      return reject(`unknown event ${(e as { type: unknown }).type}`);
  }
}

/** A message to a COMPLETED run: a follow-up turn while the conversation is open. */
function followUp(queued: RunSnapshot, e: AgentEvent, now: string): TransitionResult {
  if (queued.phase.type !== S.COMPLETED || !queued.phase.conversationOpen) return reject('the conversation is closed');
  // The answer so far stays until the next one replaces it.
  return enter({ ...queued, deadline: addMs(now, queued.limits.timeoutMs) }, plain(S.STREAMING), e, now);
}

/** A tool call that failed on its own: one an interrupting message stopped did not. */
const failed = (r: ToolResult) => !r.ok && !r.interrupted;

/** Appended to the text of a model call that a message interrupted: the model reads that it stopped, and why. */
export const INTERRUPTED_MARK = '\n\n[interrupted by the user]';
/** The feedback on each call still waiting for approval when a message interrupted the wait. */
export const INTERRUPTED_APPROVAL = 'Not decided: the user interrupted with a new message instead.';
/** The result of a tool call that a message stopped before it ended. */
export const INTERRUPTED_TOOL = 'Stopped before it finished: the user interrupted with a new message.';

/**
 * A message that stops the work in flight (sendMessage with `interrupt`). In a model step the call is cancelled, the
 * text it streamed so far stays as an assistant message marked `interrupted`, and the step starts again with the
 * message. While tools run, those that may be stopped are (`interruptTools`) and the others awaited; while calls wait
 * for approval, those still undecided are rejected. The message goes with the next model call; elsewhere (a wait for
 * the budget, PAUSED, compaction, the critic) it is queued as any message is.
 */
function interrupt(s: RunSnapshot, e: Extract<AgentEvent, { type: 'INTERRUPT' }>, now: string): TransitionResult {
  const queued: RunSnapshot = { ...s, queuedMessages: [...s.queuedMessages, e.text] };
  const phase = s.phase;
  switch (phase.type) {
    case S.STREAMING:
    case S.PLANNING: {
      const kept = s.partialText.trim() ? [{ role: 'assistant' as const, content: `${s.partialText}${INTERRUPTED_MARK}`, interrupted: true as const }] : [];
      const result = enter({ ...queued, messages: [...s.messages, ...kept] }, plain(phase.type), e, now);
      return result.ok ? ok(result.snapshot, [{ type: 'cancelWork' }, ...result.commands]) : result;
    }
    case S.TOOL_EXECUTING:
      return ok(queued, [{ type: 'interruptTools' }]);
    case S.AWAITING_APPROVAL: {
      if (phase.pending.some((p) => p.kind === 'budget')) return ok(queued);
      // Each undecided call rejected as a person would reject it; the last decision moves the run on.
      let result: TransitionResult = ok(queued);
      for (const p of undecided(s)) {
        if (!result.ok) break;
        result = handle(result.snapshot, { type: 'APPROVAL', toolCallId: p.toolCallId, approved: false, feedback: INTERRUPTED_APPROVAL }, now);
      }
      if (!result.ok) return result;
      const transitions = result.snapshot.transitions.map((t, i) => (i >= s.transitions.length ? { ...t, event: e.type } : t));
      return ok({ ...result.snapshot, transitions }, result.commands);
    }
    case S.COMPLETED:
      return followUp(queued, e, now);
    default:
      return ok(queued);
  }
}

function processResponse(s: RunSnapshot, e: AgentEvent, now: string): TransitionResult {
  const calls = s.pendingToolCalls;
  if (CUT_OFF[version(s).cutOffAnswers].isCut(s)) return processCutOff(s, e, now);
  if (calls.length === 0) return enter(s, plain(S.CRITIQUE), e, now);
  if (isToolCallLimitReached(s, calls.length)) {
    return atLimit(s, e, now, `tool call limit reached: ${s.toolCalls} done, ${calls.length} more requested, limits.maxToolCalls is ${s.limits.maxToolCalls}`);
  }
  const signatures = [...s.toolSignatures, ...calls.map(toolSignature)];
  const repetition = findRepetition(signatures, s.limits.maxRepeats);
  if (repetition && s.loopWarned) return fail(s, e, now, `loop detected: ${describeRepetition(repetition)}`);
  if (repetition) {
    const warned = calls.map((c) => ({ toolCallId: c.id, name: c.name, ok: false, content: LOOP_WARNING }));
    const next: RunSnapshot = {
      ...s,
      loopWarned: true,
      toolSignatures: signatures,
      reason: `warned the model: ${describeRepetition(repetition)}`,
      pendingToolCalls: [],
      messages: [...s.messages, ...warned.map((r) => ({ role: 'tool' as const, toolCallId: r.toolCallId, content: r.content }))],
    };
    return enter(next, plain(S.STREAMING), e, now);
  }
  const next = withPolicy({ ...s, toolSignatures: signatures }, now);
  const guarded = calls.filter((c) => c.policy?.action !== 'deny' && (needsApproval(s, c.name) || c.policy?.action === 'approve'));
  if (guarded.length > 0) {
    const pending = guarded.map((c) => ({ toolCallId: c.id, kind: 'tool' as const, name: c.name, arguments: c.arguments, ...(c.parameters ? { parameters: c.parameters } : {}) }));
    return enter(next, { type: S.AWAITING_APPROVAL, pending, then: plain(S.TOOL_EXECUTING) }, e, now);
  }
  return enter(next, plain(S.TOOL_EXECUTING), e, now);
}

/**
 * The worker's tool policy's verdicts on the answer's calls (set by the model activity, so recorded in its result):
 * a denied call is answered with the policy's message and logged as ended at once; the reason lists every verdict.
 */
function withPolicy(s: RunSnapshot, now: string): RunSnapshot {
  const judged = s.pendingToolCalls.filter((c) => c.policy);
  if (judged.length === 0) return s;
  const denied = judged.flatMap((c) => (c.policy?.action === 'deny' ? [{ call: c, message: c.policy.message }] : []));
  const step = s.step + 1;
  const logged = denied.map(({ call, message }): ToolCallRecord => ({ toolCallId: call.id, name: call.name, arguments: clip200(call.arguments), policy: 'deny', startStep: step, startedAt: now, endStep: step, endedAt: now, ok: false, output: clip200(message) }));
  const said = judged.map((c) => `${POLICY_VERB[c.policy!.action]} ${c.name} (${c.id})${policyWhy(c.policy!)}`);
  return {
    ...s,
    reason: `tool policy: ${said.join('; ')}`,
    presetResults: [...s.presetResults, ...denied.map(({ call, message }) => ({ toolCallId: call.id, name: call.name, ok: false, content: message }))],
    toolLog: [...s.toolLog, ...logged].slice(-TOOL_LOG_SIZE),
  };
}

const POLICY_VERB = { deny: 'denied', approve: 'held for approval', rewrite: 'rewrote the arguments of' } as const;
const policyWhy = (v: NonNullable<ToolCall['policy']>) => (v.action === 'deny' ? `: ${v.message}` : v.reason ? `: ${v.reason}` : '');

/**
 * A response the output limit cut off. Tool calls go back to the model as errors (their arguments may be cut
 * mid-way); a text answer is continued by the next call, up to MAX_CONTINUATIONS times, then ends the run as it is.
 */
function processCutOff(s: RunSnapshot, e: AgentEvent, now: string): TransitionResult {
  const calls = s.pendingToolCalls;
  if (calls.length > 0) {
    const cut = calls.map((c) => ({ role: 'tool' as const, toolCallId: c.id, content: CUT_TOOL_CALL }));
    return enter({ ...s, pendingToolCalls: [], continuations: 0, messages: [...s.messages, ...cut] }, plain(S.STREAMING), e, now);
  }
  if (s.continuations >= MAX_CONTINUATIONS) return endTruncated(s, e, now, `still was after ${MAX_CONTINUATIONS} continuations`);
  const next: RunSnapshot = {
    ...s,
    reason: `continuing an answer cut off by ${outputLimit(s)}`,
    continuations: s.continuations + 1,
    messages: [...s.messages, { role: 'user', content: CONTINUE_PROMPT }],
  };
  return enter(next, plain(S.STREAMING), e, now);
}

const outputLimit = (s: RunSnapshot) => (s.options.maxOutputTokens === undefined ? "the provider's output limit" : `maxOutputTokens ${s.options.maxOutputTokens}`);

/** The text so far is worth more than a failure: an answer no continuation may follow ends the run as it is, saying why. */
function endTruncated(s: RunSnapshot, e: AgentEvent, now: string, why: string): TransitionResult {
  return finish({ ...s, continuations: 0 }, S.COMPLETED, e, now, `the answer was cut off by ${outputLimit(s)} and ${why}: it ends truncated`, lastAssistantText(s));
}

function applyCritique(s: RunSnapshot, e: AgentEvent, now: string): TransitionResult {
  const decision = s.lastCritique!;
  const afterTools = s.lastToolResults.length > 0;
  const setback = decision.action === CritiqueAction.RETRY || decision.action === CritiqueAction.REPLAN;
  const next: RunSnapshot = { ...s, setbacksInARow: setback ? s.setbacksInARow + 1 : 0 };
  if (isStuckInSetbacks(next)) {
    return fail(next, e, now, `no progress: the critic asked for another attempt ${next.setbacksInARow} times in a row (last: ${decision.action}, ${decision.reason})`);
  }
  // A model critic's word on a tool step: the model has not answered with the results yet, so it cannot be complete.
  const modelOnTools = afterTools && e.type === 'CRITIQUE_DONE' && critiqueMode(s) === 'model';
  const action = modelOnTools && decision.action === CritiqueAction.COMPLETE ? CritiqueAction.CONTINUE : decision.action;
  switch (action) {
    case CritiqueAction.CONTINUE:
      return enter(next, plain(S.STREAMING), e, now);
    case CritiqueAction.RETRY:
      if (!afterTools) {
        next.messages = [...s.messages, { role: 'user', content: `Your answer needs another attempt: ${decision.reason}` }];
      } else if (modelOnTools) {
        // The rules' retry follows a failed tool the model sees; a model critic's may follow a success it judged wrong.
        next.messages = [...s.messages, { role: 'user', content: `${TOOL_RETRY_NOTE}${decision.reason}` }];
      }
      return enter(next, plain(S.STREAMING), e, now);
    case CritiqueAction.REPLAN:
      next.messages = [...s.messages, { role: 'user', content: `The current approach is not working (${decision.reason}). Make a new plan.` }];
      return enter(next, plain(S.PLANNING), e, now);
    case CritiqueAction.COMPLETE: {
      // A message sent during the run deserves an answer before the run ends.
      if (s.queuedMessages.length > 0) return enter(next, plain(S.STREAMING), e, now);
      const answer = lastAssistantText(s);
      return finish(next, S.COMPLETED, e, now, decision.reason, answer);
    }
  }
}

/**
 * Move into `target`, honouring the limits and a requested pause on the way into new work,
 * and emit the commands that the target state starts with.
 */
function enter(s: RunSnapshot, target: Phase, e: AgentEvent, now: string): TransitionResult {
  const callsModel = target.type === S.STREAMING || target.type === S.PLANNING;
  if (callsModel && isLoopLimitReached(s)) {
    if (s.continuations > 0) return endTruncated(s, e, now, `limits.maxLoops (${s.limits.maxLoops}) leaves no model call to continue it`);
    return atLimit(s, e, now, `loop limit reached: ${s.loops} model calls, limits.maxLoops is ${s.limits.maxLoops}`);
  }
  const overBudget = callsModel ? budgetExceeded(s) : null;
  if (overBudget && s.options.budget?.onExceed === 'approve') {
    const request = { toolCallId: 'budget', kind: 'budget' as const, name: 'budget', arguments: JSON.stringify({ reason: overBudget }) };
    return ok(moveTo({ ...s, reason: overBudget }, { type: S.AWAITING_APPROVAL, pending: [request], then: target as WorkPhase }, e, now));
  }
  if (overBudget) return fail(s, e, now, overBudget);
  if (s.pauseRequested && WORK_STATES.includes(target.type)) {
    return ok(moveTo({ ...s, pauseRequested: false }, { type: S.PAUSED, resumeTo: target as WorkPhase }, e, now));
  }
  // Once per model step: a request still too large after compacting is left to the provider (and the reactive path).
  const overflow = callsModel && e.type !== 'COMPACTED' ? PROACTIVE_COMPACTION[version(s).proactiveCompaction](s) : null;
  if (overflow) return enter({ ...s, reason: overflow }, { type: S.COMPACTING, returnTo: target.type as ModelStep }, e, now);
  let next = moveTo(s, target, e, now);
  if (target.type === S.TOOL_EXECUTING) next = { ...next, toolLog: toolsStarted(next, now) };
  // A request carries a child only where the machine version starts child runs (children.ts).
  if (target.type === S.TOOL_EXECUTING) next = { ...next, ...childrenStarted(next, commandsFor(next).flatMap((c) => (c.type === 'runTools' ? c.requests : []))) };
  if (callsModel) {
    const callNumber = s.loops + 1;
    const queued = s.queuedMessages.map((text) => ({ role: 'user' as const, content: text }));
    // Not on a continuation: the request to go on with a cut-off answer must stay the last message.
    const near = !s.wrapUpSent && s.continuations === 0 ? WRAP_UP[version(s).wrapUp](s) : null;
    const wrapUp = near ? [{ role: 'user' as const, content: wrapUpNote(near) }] : [];
    const messages = [...next.messages, ...queued, ...wrapUp];
    next = { ...next, loops: callNumber, partialText: '', stream: { callNumber, attempt: 1 }, queuedMessages: [], messages, wrapUpSent: s.wrapUpSent || near !== null };
  }
  return ok(next, commandsFor(next));
}

/**
 * The work a state stands for, from the snapshot alone, with its activity requests built. Used on the way into a
 * state, and to carry on from a snapshot: after continue-as-new, or in a run forked from a step.
 */
export function commandsFor(s: RunSnapshot): WorkCommand[] {
  switch (s.phase.type) {
    case S.PLANNING:
      return [{ type: 'callModel', request: modelRequest(s, 'plan', s.loops) }];
    case S.STREAMING:
      return [{ type: 'callModel', request: chained(s, modelRequest(s, 'respond', s.loops)) }];
    case S.TOOL_EXECUTING: {
      const preset = new Set(s.presetResults.map((r) => r.toolCallId));
      const calls = s.pendingToolCalls.filter((c) => !preset.has(c.id));
      return [{ type: 'runTools', requests: calls.map((call, i) => withChild(s, { call, allowed: s.options.tools, callNumber: s.toolCalls + 1 + i })) }];
    }
    case S.CRITIQUE:
      if (critiqueMode(s) === 'rules') return [];
      return [{ type: 'critique', request: critiqueRequest(s), timeouts: version(s).criticTimeouts }];
    case S.COMPACTING:
      return [{ type: 'compact', request: compactionRequest(s, KEEP_RECENT[version(s).keepRecent](s)) }];
    case S.COMPLETED:
      return s.phase.conversationOpen ? [{ type: 'awaitMessage', ms: s.options.keepOpenMs }] : [];
    default:
      return [];
  }
}

/**
 * Carry on from a snapshot taken elsewhere: the same state, its work started again from the beginning (an internal
 * step, in a snapshot taken inside a macrostep, is taken now), and the timer on its clocks.
 */
export function resumeAt(s: RunSnapshot, now: string): { snapshot: RunSnapshot; commands: AgentCommand[] } {
  const modelStep = s.phase.type === S.STREAMING || s.phase.type === S.PLANNING;
  let snapshot: RunSnapshot = { ...s, partialText: modelStep ? '' : s.partialText, stream: modelStep ? { callNumber: s.loops, attempt: 1 } : s.stream };
  const internal = internalEvent(snapshot);
  if (internal) {
    const result = transition(snapshot, internal, now);
    if (!result.ok) throw new Error(`machine bug: ${result.error}`);
    snapshot = result.snapshot;
  }
  const due = timerDue(snapshot);
  const timer: AgentCommand[] = due === null ? [] : [{ type: 'timer', due }];
  return { snapshot, commands: [...timer, ...commandsFor(snapshot)] };
}

/** Why edited arguments cannot be taken: only with an approval, for a tool whose schema is known, and passing it. */
function editProblem(pending: { name: string; parameters?: Record<string, unknown> }, approved: boolean, args: Record<string, unknown>): string | null {
  if (!approved) return 'edited arguments come with an approval, not a rejection';
  if (!pending.parameters) return `arguments of ${pending.name} cannot be edited: the worker sent no schema for it`;
  const problem = argumentsProblem(pending.parameters, args);
  return problem ? `edited arguments of ${pending.name} are invalid: ${problem}` : null;
}

/**
 * What a person decided on a turn's calls, for the model: each call approved with edited arguments (and the
 * arguments it ran with), and the feedback of each decision that has one. Null when there is nothing to tell.
 */
export function approvalNote(decided: PendingApproval[]): string | null {
  const lines = decided.flatMap((p) => {
    const d = p.decision;
    const feedback = d?.feedback?.trim();
    if (!d || (d.arguments === undefined && !feedback)) return [];
    const verdict = !d.approved ? 'rejected' : d.arguments !== undefined ? `approved with edited arguments; it ran with ${d.arguments}` : 'approved';
    return [`- ${p.name} (call ${p.toolCallId}): ${verdict}.${feedback ? ` Feedback: ${feedback}` : ''}`];
  });
  return lines.length > 0 ? `${APPROVAL_NOTE_HEAD}\n${lines.join('\n')}` : null;
}

/** The first line of the user message that carries a person's decisions on a turn's tool calls. */
export const APPROVAL_NOTE_HEAD = "The user's decisions on your tool calls in this turn:";


/** A tool's result as the model reads it in runs begun before approval notes: after edited arguments, it is told what ran. */
function withEdit(s: RunSnapshot, r: ToolResult): string {
  const call = s.pendingToolCalls.find((c) => c.id === r.toolCallId);
  return call?.edited ? `(The user approved this call with edited arguments: ${call.arguments})\n${r.content}` : r.content;
}

/** A request for a call of a named agent carries the child run it starts (children.ts). */
function withChild(s: RunSnapshot, request: ToolRequest): ToolRequest {
  const child = childRequest(s, request.call, request.callNumber);
  return child ? { ...request, child } : request;
}

/** Tool calls watchers see: the last TOOL_LOG_SIZE. */
const TOOL_LOG_SIZE = 20;
const clip200 = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** The calls a TOOL_EXECUTING step runs, started at its step. */
function toolsStarted(s: RunSnapshot, now: string): ToolCallRecord[] {
  const preset = new Set(s.presetResults.map((r) => r.toolCallId));
  const started = s.pendingToolCalls
    .filter((c) => !preset.has(c.id))
    .map((c): ToolCallRecord => ({ toolCallId: c.id, name: c.name, arguments: clip200(c.arguments), ...(c.edited ? { edited: true as const } : {}), ...(c.policy ? { policy: c.policy.action } : {}), startStep: s.step, startedAt: now, endStep: null, endedAt: null, ok: null, output: null }));
  return [...s.toolLog, ...started].slice(-TOOL_LOG_SIZE);
}

/** The calls `results` answered, ended at `step`. */
function toolsEnded(log: ToolCallRecord[], results: ToolResult[], step: number, now: string): ToolCallRecord[] {
  const byId = new Map(results.map((r) => [r.toolCallId, r]));
  return log.map((t) => {
    const r = t.endedAt === null ? byId.get(t.toolCallId) : undefined;
    return r ? { ...t, endStep: step, endedAt: now, ok: r.ok, output: clip200(r.content) } : t;
  });
}

/** A run at `maxLoops` or `maxToolCalls`: it fails, or with `limits.onLimit: 'complete'` ends with its last text. */
function atLimit(s: RunSnapshot, e: AgentEvent, now: string, reason: string): TransitionResult {
  if ((s.limits.onLimit ?? 'fail') === 'fail') return fail(s, e, now, reason);
  // Calls left unrun are answered, so that a follow-up turn (keepOpenMs) sends the provider a well-formed conversation.
  const unrun = s.pendingToolCalls.map((c) => ({ role: 'tool' as const, toolCallId: c.id, content: `Not executed: ${reason}.` }));
  const next = { ...s, pendingToolCalls: [], messages: [...s.messages, ...unrun] };
  return finish(next, S.COMPLETED, e, now, `${reason}: completed with the last text (limits.onLimit is complete)`, lastAssistantText(s));
}

/** What the model is told of a call nobody decided on within `limits.approvalTimeoutMs` (approval.onTimeout 'reject'). */
export const approvalTimedOut = (ms: number | undefined) => `Not executed: nobody approved this call within ${ms} ms (limits.approvalTimeoutMs). Go on without it, or ask the user.`;

/** The approval wait's reminder, raised once at `approval.reminderAt` of its window: the state stays, the view shows it. */
function remind(s: RunSnapshot, pending: PendingApproval[], deadline: string, now: string): RunSnapshot {
  const onTimeout = s.options.approvalOnTimeout ?? 'fail';
  const toolCallIds = pending.filter((p) => !p.decision).map((p) => p.toolCallId);
  return { ...s, approvalReminderDue: null, approvalReminder: { at: now, deadline, onTimeout, toolCallIds } };
}

/** The approval window ran out with `approval.onTimeout: 'reject'`: the undecided calls are rejected and the run goes on. */
function rejectUndecided(s: RunSnapshot, phase: Extract<Phase, { type: typeof S.AWAITING_APPROVAL }>, why: string, e: AgentEvent, now: string): TransitionResult {
  const timedOut = phase.pending.filter((p) => !p.decision);
  const decided = phase.pending.map((p) => (p.decision ? p : { ...p, decision: { approved: false } }));
  const rejected = decided.filter((p) => !p.decision?.approved);
  const edits = new Map(decided.filter((p) => p.decision?.arguments !== undefined).map((p) => [p.toolCallId, p.decision!.arguments!]));
  const pendingToolCalls = s.pendingToolCalls.map((c) => (edits.has(c.id) ? { ...c, arguments: edits.get(c.id)!, edited: true as const } : c));
  const content = (p: PendingApproval) => (timedOut.includes(phase.pending[decided.indexOf(p)]) ? approvalTimedOut(s.limits.approvalTimeoutMs) : decisions(s).rejected(p));
  const next: RunSnapshot = {
    ...s,
    pendingToolCalls,
    reason: `${why}: rejected (approval.onTimeout is reject)`,
    approvalNote: decisions(s).noteOf(decided),
    presetResults: [...s.presetResults, ...rejected.map((p) => ({ toolCallId: p.toolCallId, name: p.name, ok: false, content: content(p) }))],
  };
  return enter(next, phase.then, e, now);
}

function fail(s: RunSnapshot, e: AgentEvent, now: string, reason: string): TransitionResult {
  return finish({ ...s, lastError: reason }, S.FAILED, e, now, reason);
}

type Ending = typeof S.COMPLETED | typeof S.FAILED | typeof S.ABORTED;

function finish(s: RunSnapshot, to: Ending, e: AgentEvent, now: string, reason: string, answer: string | null = null): TransitionResult {
  const phase: Phase = to === S.COMPLETED ? { type: to, conversationOpen: s.options.keepOpenMs > 0 } : { type: to };
  const next = moveTo({ ...s, turns: s.turns + (to === S.COMPLETED ? 1 : 0), reason, answer, pauseRequested: false }, phase, e, now);
  return ok(next, [{ type: 'cancelWork' }, ...commandsFor(next)]);
}

/**
 * The same model step again on the next of `fallbackModels`, not counted as another loop (the failed call made no
 * answer); with none left, or in runs begun before `model-fallback`, the run fails as with any final model error.
 */
function fallBack(s: RunSnapshot, e: Extract<AgentEvent, { type: 'MODEL_UNAVAILABLE' }>, now: string): TransitionResult {
  const [to, ...rest] = s.options.fallbackModels ?? [];
  if (to === undefined) return fail(s, e, now, `model call failed: ${e.error}`);
  const from = s.options.model ?? null;
  const switched = { from, to, error: e.error, step: s.step + 1, at: now };
  const next: RunSnapshot = {
    ...s,
    loops: s.loops - 1,
    options: { ...s.options, model: to, fallbackModels: rest },
    modelSwitches: [...(s.modelSwitches ?? []), switched],
    reason: `${from ?? "the worker's default model"} is unavailable, switched to ${to}: ${e.error}`,
  };
  return enter(next, plain(s.phase.type as ModelStep), e, now);
}

/** PAUSED instead of a model call that waits for the budget: RESUME makes the call afresh, so it is counted once. */
function pausedBeforeCall(s: RunSnapshot, e: AgentEvent, now: string): RunSnapshot {
  const resumeTo = plain(s.phase.type as ModelStep);
  return moveTo({ ...s, loops: s.loops - 1, pauseRequested: false }, { type: S.PAUSED, resumeTo }, e, now);
}

function moveTo(s: RunSnapshot, to: Phase, e: AgentEvent, now: string): RunSnapshot {
  const from = s.phase.type;
  const reopening = from === S.COMPLETED && (e.type === 'MESSAGE' || e.type === 'INTERRUPT');
  if (isTerminal(from) && !reopening) throw new Error(`machine bug: leaving terminal state ${from}`);
  return {
    ...s,
    ...movedClocks(s, to.type, now),
    phase: to,
    stateSince: now,
    step: s.step + 1,
    // A wait for the provider budget belongs to the model call of the state it was in.
    quotaWait: null,
    transitions: [...s.transitions, { from, to: to.type, event: e.type, at: now }],
  };
}


/*
 * What each behaviour a machine version names does (machine/versions.ts). The machine reads the run's version and
 * looks its behaviours up here; no code below branches on a patch.
 */

type Handler<E extends AgentEvent['type']> = (s: RunSnapshot, e: Extract<AgentEvent, { type: E }>, now: string) => TransitionResult;

/** An answer the output limit cut off (`cutOffAnswers`): is it one, and what its response changes about continuing. */
const CUT_OFF = {
  ignored: { isCut: () => false, continued: (): Partial<RunSnapshot> => ({}) },
  continued: { isCut: (s: RunSnapshot) => s.lastFinishReason === 'length', continued },
} as const;

/** A model call refused for unknown tools (`unknownTools`): the run fails, with the call counted or taken back. */
const UNKNOWN_TOOLS: Record<MachineDefinition['unknownTools'], Handler<'UNKNOWN_TOOLS'>> = {
  counted: (s, e, now) => fail(s, e, now, `model call failed: ${e.error}`),
  uncounted: (s, e, now) => {
    // No request was made: the call the way into this step counted is taken back.
    const loops = s.loops - 1;
    return fail({ ...s, loops, stream: loops > 0 ? { callNumber: loops, attempt: 1 } : null }, e, now, `no model call was made: ${e.error}`);
  },
};

/** A model that is gone or refuses the keys (`modelUnavailable`). */
const MODEL_UNAVAILABLE_HANDLING: Record<MachineDefinition['modelUnavailable'], Handler<'MODEL_UNAVAILABLE'>> = {
  fails: (s, e, now) => fail(s, e, now, `model call failed: ${e.error}`),
  fallsBack: fallBack,
};

/** A message that interrupts (`interrupt`). */
const INTERRUPTS: Record<MachineDefinition['interrupt'], Handler<'INTERRUPT'>> = {
  refused: () => reject('this run began before interrupting messages: send the message without interrupt'),
  stopsWork: interrupt,
};

/** The run's timer fired (`clocks`): one deadline ends the run; with working time, the clock that ran out decides. */
const TIMEOUTS: Record<MachineDefinition['clocks'], Handler<'TIMEOUT'>> = {
  workflowTimer: (s, e, now) => fail(s, e, now, `timed out after ${s.limits.timeoutMs} ms (limits.timeoutMs)`),
  workingTime: (s, e, now) => {
    if (s.deadline !== null) return fail(s, e, now, `timed out after ${s.limits.timeoutMs} ms of working time (limits.timeoutMs)`);
    // While a person decides, only the clocks of the wait run.
    if (s.phase.type === S.PAUSED && s.pausedDeadline) return finish(s, S.ABORTED, e, now, `aborted: paused for ${s.limits.maxPausedMs} ms (limits.maxPausedMs)`);
    if (s.phase.type !== S.AWAITING_APPROVAL || s.approvalDeadline === null) return reject('no timer is running: the run waits for a person');
    if (s.approvalReminderDue && now < s.approvalDeadline) return ok(remind(s, s.phase.pending, s.approvalDeadline, now));
    const undecidedNow = s.phase.pending.filter((p) => !p.decision);
    const waiting = undecidedNow.map((p) => p.name);
    const why = `no decision on ${waiting.join(', ')} within ${s.limits.approvalTimeoutMs} ms (limits.approvalTimeoutMs)`;
    if (s.options.approvalOnTimeout === 'reject' && undecidedNow.every((p) => p.kind === 'tool')) return rejectUndecided(s, s.phase, why, e, now);
    return fail(s, e, now, why);
  },
};

/** A critic's `complete` below `critiqueMinConfidence` (`criticConfidence`): taken, or another attempt. */
const CONFIDENCE: Record<MachineDefinition['criticConfidence'], (d: CritiqueDecision, min: number) => CritiqueDecision> = {
  ignored: (d) => d,
  retried: confident,
};

/** A compaction's usage (`compactionUsage`): its tokens, or its tokens and their cost. */
const COMPACTION_USAGE: Record<MachineDefinition['compactionUsage'], (s: RunSnapshot, u: Usage) => RunSnapshot['usage']> = {
  tokens: (s, u) => ({ ...s.usage, ...addUsage(s.usage, u) }),
  tokensAndCost: (s, u) => withSideUsage(s, u).usage,
};

/** Why the next model step compacts first (`proactiveCompaction`), or null. */
const PROACTIVE_COMPACTION: Record<MachineDefinition['proactiveCompaction'], (s: RunSnapshot) => string | null> = {
  never: () => null,
  overThreshold: contextWouldOverflow,
};

/** The limit the next model call comes close to, to be told once (`wrapUp`), or null. */
const WRAP_UP: Record<MachineDefinition['wrapUp'], (s: RunSnapshot) => string | null> = { never: () => null, nearLimit };

/** Messages compaction keeps verbatim (`keepRecent`). */
const KEEP_RECENT: Record<MachineDefinition['keepRecent'], (s: RunSnapshot) => number> = {
  fixedSix: () => KEEP_RECENT_MESSAGES,
  asConfigured: (s) => s.options.compaction.keepRecentMessages,
};

/** How a person's decisions reach the model (`decisionsToModel`): in each tool message, or in one note after them. */
interface DecisionsToModel {
  toolMessage: (s: RunSnapshot, r: ToolResult) => string;
  /** The user message after the turn's tool results. */
  note: (s: RunSnapshot) => ChatMessage[];
  noteOf: (decided: PendingApproval[]) => string | null;
  rejected: (p: PendingApproval) => string;
  /** The feedback of an approved budget extension, told to the model. */
  budgetFeedback: (feedback: string | undefined) => string | undefined;
}
const DECISIONS: Record<MachineDefinition['decisionsToModel'], DecisionsToModel> = {
  inToolResults: {
    toolMessage: withEdit,
    note: () => [],
    noteOf: () => null,
    rejected: (p) => `The user rejected this call${p.decision?.feedback ? `: ${p.decision.feedback}` : '.'}`,
    budgetFeedback: () => undefined,
  },
  approvalNote: {
    toolMessage: (_s, r) => r.content,
    note: (s) => (s.approvalNote ? [{ role: 'user', content: s.approvalNote }] : []),
    noteOf: approvalNote,
    // The feedback is in the note, beside that of every other decision.
    rejected: () => 'The user rejected this call.',
    budgetFeedback: (feedback) => feedback?.trim(),
  },
};
const decisions = (s: RunSnapshot): DecisionsToModel => DECISIONS[version(s).decisionsToModel];
