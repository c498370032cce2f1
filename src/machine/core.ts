/**
 * What the machine's rows share: the moves (`enter` with each state's eventless rows, `finish`, `fail`) and the work a
 * state stands for (`commandsFor`). Pure.
 */
import type { ToolCall, ToolRequest, ToolResult } from '../common/chat';
import { isLoopLimitReached, nearLimit } from './guards';
import { budgetExceeded, contextWouldOverflow } from './budget';
import { childRequest, childrenStarted } from './children';
import { decidedFields, withDeciders } from './controls';
import { chained } from './chain';
import { movedClocks } from './clocks';
import { ruleCritique } from './critic';
import { compactionRequest, critiqueRequest, modelRequest } from './requests';
import { lastAssistantText } from './responses';
import type { ModelStep, PendingApproval, Phase, RunSnapshot, WorkPhase } from './snapshot';
import type { ToolCallRecord } from '../common/view';
import { FailureType, ModelErrorType } from '../common/failures';
import { argumentsProblem } from '../common/input';
import { AgentState, isTerminal } from '../common/states';
import type { EventlessRow, Row } from './table';
import type { AgentCommand, AgentEvent, TransitionResult, WorkCommand } from './types';

export const S = AgentState;

/** Text the model is given in place of a call that the repetition guard stopped. */
export const LOOP_WARNING =
  'Not executed: this repeats your earlier calls without progress. Use the results you already have or try a different approach; repeating it again ends the run.';

/** Text the model is given in place of tool calls whose response the output limit cut off. */
export const CUT_TOOL_CALL =
  'Not executed: your response was cut off by the output limit before this tool call was complete. Call it again with shorter arguments.';

/** The user turn that tells the model, once, that the run is close to a limit. */
export const wrapUpNote = (near: string) => `You are close to this run's limits (${near}). Conclude now: give your best answer with what you already have.`;

/** The user turn after a tool step the model critic asked to try again, before its reason. */
export const TOOL_RETRY_NOTE = 'A reviewer judged your last tool calls and asks for another attempt: ';

/** How many times an answer cut off by the output limit is continued before the run ends with it as it is. */
export const MAX_CONTINUATIONS = 3;

/** The run awaits a follow-up message in a kept-open conversation. */
export const awaitsMessage = (s: RunSnapshot): boolean => s.phase.type === S.COMPLETED && s.phase.conversationOpen;

/** The run has work ahead or may still take a follow-up message. */
export const isRunning = (s: RunSnapshot): boolean => !isTerminal(s.phase.type) || awaitsMessage(s);

/** The decisions the run waits for; none outside AWAITING_APPROVAL. */
export const undecided = (s: RunSnapshot) => (s.phase.type === S.AWAITING_APPROVAL ? s.phase.pending.filter((p) => !p.decision) : []);

/**
 * The event a state resolves with at once, with no effect to wait for; null for states that wait. `after`: the event
 * the macrostep began with (a wait whose every call is decided moves on under it).
 */
export function internalEvent(s: RunSnapshot, after?: AgentEvent['type']): AgentEvent | null {
  if (s.phase.type === S.PROCESSING) return { type: 'PROCESS' };
  if (s.phase.type === S.AWAITING_APPROVAL && s.phase.pending.every((p) => p.decision)) return { type: 'DECIDED', ...(after === 'APPROVAL' || after === 'INTERRUPT' ? { after } : {}) };
  if (s.phase.type === S.CRITIQUE && s.options.critique === 'rules') return { type: 'CRITIQUE_DONE', decision: ruleCritique(s) };
  return null;
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
export const MODEL_UNAVAILABLE = [
  ModelErrorType.NotFound,
  ModelErrorType.Authentication,
  ModelErrorType.PermissionDenied,
  ModelErrorType.QuotaExceeded,
  ModelErrorType.RetriesExhausted,
] as const;

/** Keep the rejection on the snapshot so that the `state` query shows it. */
export function recordRejection(s: RunSnapshot, event: AgentEvent, error: string, now: string): RunSnapshot {
  const entry = { event: event.type, state: s.phase.type, at: now, error };
  return { ...s, logs: { ...s.logs, rejectedEvents: [...s.logs.rejectedEvents, entry].slice(-20) } };
}

export const ok = (snapshot: RunSnapshot, commands: AgentCommand[] = []): TransitionResult => ({ ok: true, snapshot, commands });
/** A phase that carries no data of its own. */
export const plain = <T extends Exclude<AgentState, typeof S.AWAITING_APPROVAL | typeof S.PAUSED | typeof S.COMPACTING | typeof S.COMPLETED>>(type: T) => ({ type });
export const reject = (error: string): TransitionResult => ({ ok: false, error });

/** A tool call that failed on its own: one an interrupting message stopped did not. */
export const failed = (r: ToolResult) => !r.ok && !r.interrupted;

/** Appended to the text of a model call that a message interrupted: the model reads that it stopped, and why. */
export const INTERRUPTED_MARK = '\n\n[interrupted by the user]';
/** The feedback on each call still waiting for approval when a message interrupted the wait. */
export const INTERRUPTED_APPROVAL = 'Not decided: the user interrupted with a new message instead.';
/** The result of a tool call that a message stopped before it ended. */
export const INTERRUPTED_TOOL = 'Stopped before it finished: the user interrupted with a new message.';

/**
 * The worker's tool policy's verdicts on the answer's calls (set by the model activity, so recorded in its result):
 * a denied call is answered with the policy's message and logged as ended at once; the reason lists every verdict.
 */
export function withPolicy(s: RunSnapshot, now: string): RunSnapshot {
  const judged = s.toolRound.pending.filter((c) => c.policy);
  if (judged.length === 0) return s;
  const denied = judged.flatMap((c) => (c.policy?.action === 'deny' ? [{ call: c, message: c.policy.message }] : []));
  const step = s.counters.step + 1;
  const logged = denied.map(({ call, message }): ToolCallRecord => ({ toolCallId: call.id, name: call.name, arguments: clip200(call.arguments), policy: 'deny', startStep: step, startedAt: now, endStep: step, endedAt: now, ok: false, output: clip200(message) }));
  const said = judged.map((c) => `${POLICY_VERB[c.policy!.action]} ${c.name} (${c.id})${policyWhy(c.policy!)}`);
  return {
    ...s,
    reason: { kind: 'toolPolicy', text: `tool policy: ${said.join('; ')}` },
    toolRound: { ...s.toolRound, presetResults: [...s.toolRound.presetResults, ...denied.map(({ call, message }) => ({ toolCallId: call.id, name: call.name, ok: false, content: message }))] },
    logs: { ...s.logs, toolCalls: [...s.logs.toolCalls, ...logged].slice(-TOOL_LOG_SIZE) },
  };
}

export const POLICY_VERB = { deny: 'denied', approve: 'held for approval', rewrite: 'rewrote the arguments of' } as const;
export const policyWhy = (v: NonNullable<ToolCall['policy']>) => (v.action === 'deny' ? `: ${v.message}` : v.reason ? `: ${v.reason}` : '');

export const outputLimit = (s: RunSnapshot) => (s.options.maxOutputTokens === undefined ? "the provider's output limit" : `maxOutputTokens ${s.options.maxOutputTokens}`);

/** The text so far is worth more than a failure: an answer no continuation may follow ends the run as it is, saying why. */
export function endTruncated(s: RunSnapshot, e: AgentEvent, now: string, why: string): TransitionResult {
  return finish({ ...s, counters: { ...s.counters, continuations: 0 } }, S.COMPLETED, e, now, `the answer was cut off by ${outputLimit(s)} and ${why}: it ends truncated`, lastAssistantText(s));
}

export const callsModel = (t: Phase) => t.type === S.STREAMING || t.type === S.PLANNING;
export const loopLimit = (s: RunSnapshot) => `loop limit reached: ${s.counters.loops} model calls, limits.maxLoops is ${s.limits.maxLoops}`;

/** A requested pause takes effect on the way into work: PAUSED, to resume into the state it would have entered. */
const PAUSE_FIRST: EventlessRow = {
  guard: { name: 'pauseRequested', holds: (s) => s.pauseRequested },
  target: S.PAUSED,
  action: { name: 'pauseBeforeWork', run: (s, target, e, now) => ok(moveTo({ ...s, pauseRequested: false }, { type: S.PAUSED, resumeTo: target as WorkPhase }, e, now)) },
};

/** Eventless rows of a model step (PLANNING, STREAMING), in order: its loop limit, its budget, a pause, compaction first. */
const MODEL_STEP_ALWAYS: readonly EventlessRow[] = [
  {
    guard: { name: 'loopLimitReachedMidAnswer', holds: (s) => isLoopLimitReached(s) && s.counters.continuations > 0 },
    target: S.COMPLETED,
    action: { name: 'endTruncated', run: (s, _t, e, now) => endTruncated(s, e, now, `limits.maxLoops (${s.limits.maxLoops}) leaves no model call to continue it`) },
  },
  { guard: { name: 'loopLimitReachedAndFails', holds: (s) => isLoopLimitReached(s) && limitFails(s) }, target: S.FAILED, action: { name: 'failAtLimit', run: (s, _t, e, now) => atLimit(s, e, now, loopLimit(s)) } },
  { guard: { name: 'loopLimitReached', holds: (s) => isLoopLimitReached(s) }, target: S.COMPLETED, action: { name: 'completeAtLimit', run: (s, _t, e, now) => atLimit(s, e, now, loopLimit(s)) } },
  {
    guard: { name: 'overBudgetAndApprovable', holds: (s) => budgetExceeded(s) !== null && s.options.budget?.onExceed === 'approve' },
    target: S.AWAITING_APPROVAL,
    action: {
      name: 'askToExtendBudget',
      run: (s, target, e, now) => {
        const overBudget = budgetExceeded(s)!;
        const request = { toolCallId: 'budget', kind: 'budget' as const, name: 'budget', arguments: JSON.stringify({ reason: overBudget }) };
        return ok(moveTo({ ...s, reason: { kind: 'budget', text: overBudget } }, { type: S.AWAITING_APPROVAL, pending: [request], then: target as WorkPhase }, e, now));
      },
    },
  },
  { guard: { name: 'overBudget', holds: (s) => budgetExceeded(s) !== null }, target: S.FAILED, action: { name: 'failOverBudget', run: (s, _t, e, now) => fail(s, e, now, budgetExceeded(s)!) } },
  PAUSE_FIRST,
  {
    // Once per model step: a request still too large after compacting is left to the provider (and the reactive path).
    guard: { name: 'wouldOverflowContext', holds: (s, e) => e.type !== 'COMPACTED' && contextWouldOverflow(s) !== null },
    target: S.COMPACTING,
    action: {
      name: 'compactFirst',
      run: (s, target, e, now) => enter({ ...s, reason: { kind: 'compaction', text: contextWouldOverflow(s)! } }, { type: S.COMPACTING, returnTo: target.type as ModelStep }, e, now),
    },
  },
];

/** Each state's eventless rows: where a move into it goes instead (an ending, a pause and a wait are entered directly). */
export const ALWAYS: Readonly<Record<AgentState, readonly EventlessRow[]>> = {
  IDLE: [],
  PLANNING: MODEL_STEP_ALWAYS,
  STREAMING: MODEL_STEP_ALWAYS,
  PROCESSING: [],
  TOOL_EXECUTING: [PAUSE_FIRST],
  AWAITING_APPROVAL: [],
  CRITIQUE: [],
  COMPACTING: [PAUSE_FIRST],
  PAUSED: [],
  COMPLETED: [],
  FAILED: [],
  ABORTED: [],
};

/** Move into `target`, or where the first of its eventless rows that holds leads instead; emit the work it starts with. */
export function enter(s: RunSnapshot, target: Phase, e: AgentEvent, now: string): TransitionResult {
  const detour = ALWAYS[target.type].find((r) => r.guard.holds(s, e, target));
  if (!detour) return start(s, target, e, now);
  tracer.always?.(detour, target.type);
  return detour.action.run(s, target, e, now);
}

/** Told of every row and eventless row that fires, for the test that walks the table; never set in a run. */
export const tracer: { row: ((r: Row) => void) | null; always: ((r: EventlessRow, state: AgentState) => void) | null } = { row: null, always: null };

/** Move into `target` and start its work: a tool step's calls logged (and its children), a model step's call counted. */
export function start(s: RunSnapshot, target: Phase, e: AgentEvent, now: string): TransitionResult {
  let next = moveTo(s, target, e, now);
  if (target.type === S.TOOL_EXECUTING) next = { ...next, logs: { ...next.logs, toolCalls: toolsStarted(next, now) } };
  if (target.type === S.TOOL_EXECUTING) next = { ...next, ...childrenStarted(next, commandsFor(next).flatMap((c) => (c.type === 'runTools' ? c.requests : []))) };
  if (callsModel(target)) {
    const callNumber = s.counters.loops + 1;
    const queued = s.queuedMessages.map((text) => ({ role: 'user' as const, content: text }));
    // Not on a continuation: the request to go on with a cut-off answer must stay the last message.
    const near = !s.wrapUpSent && s.counters.continuations === 0 ? nearLimit(s) : null;
    const wrapUp = near ? [{ role: 'user' as const, content: wrapUpNote(near) }] : [];
    const messages = [...next.messages, ...queued, ...wrapUp];
    next = { ...next, counters: { ...next.counters, loops: callNumber }, partialText: '', stream: { callNumber, attempt: 1 }, queuedMessages: [], messages, wrapUpSent: s.wrapUpSent || near !== null };
  }
  return ok(next, commandsFor(next));
}

/** A run at a limit fails (`limits.onLimit: 'fail'`, the default) rather than completing with its last text. */
export const limitFails = (s: RunSnapshot): boolean => (s.limits.onLimit ?? 'fail') === 'fail';

/**
 * The work a state stands for, from the snapshot alone, with its activity requests built. Used on the way into a
 * state, and to carry on from a snapshot: after continue-as-new, or in a run forked from a step.
 */
export function commandsFor(s: RunSnapshot): WorkCommand[] {
  switch (s.phase.type) {
    case S.PLANNING:
      return [{ type: 'callModel', request: modelRequest(s, 'plan', s.counters.loops) }];
    case S.STREAMING:
      return [{ type: 'callModel', request: chained(s, modelRequest(s, 'respond', s.counters.loops)) }];
    case S.TOOL_EXECUTING: {
      const preset = new Set(s.toolRound.presetResults.map((r) => r.toolCallId));
      const calls = s.toolRound.pending.filter((c) => !preset.has(c.id));
      const requests = calls.map((call, i) => withChild(s, { call, allowed: s.options.tools, callNumber: s.counters.toolCalls + 1 + i, ...memoryScope(s) }));
      return [{ type: 'runTools', requests, ...(s.options.concurrentTools ? { concurrent: true as const } : {}) }];
    }
    case S.CRITIQUE:
      if (s.options.critique === 'rules') return [];
      return [{ type: 'critique', request: critiqueRequest(s) }];
    case S.COMPACTING:
      return [{ type: 'compact', request: compactionRequest(s, s.options.compaction.keepRecentMessages) }];
    case S.COMPLETED:
      return s.phase.conversationOpen ? [{ type: 'awaitMessage', ms: s.options.keepOpenMs }] : [];
    default:
      return [];
  }
}

/** Why edited arguments cannot be taken: only with an approval, for a tool whose schema is known, and passing it. */
export function editProblem(pending: { name: string; parameters?: Record<string, unknown> }, approved: boolean, args: Record<string, unknown>): string | null {
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

/** What the model is told of a call a person rejected; their feedback is in the approval note, beside every other decision's. */
export const REJECTED_CALL = 'The user rejected this call.';

/** The run's memory scope for its tool calls (the `remember` and `recall` tools): its namespace and tenant, when it has either. */
function memoryScope(s: RunSnapshot): Pick<ToolRequest, 'memory'> {
  const { memoryNamespace: namespace, tenant } = s.options;
  if (namespace === undefined && tenant === undefined) return {};
  return { memory: { ...(namespace !== undefined ? { namespace } : {}), ...(tenant !== undefined ? { tenant } : {}) } };
}

/** A request for a call of a named agent carries the child run it starts (children.ts). */
export function withChild(s: RunSnapshot, request: ToolRequest): ToolRequest {
  const child = childRequest(s, request.call, request.callNumber);
  return child ? { ...request, child } : request;
}

/** Tool calls watchers see: the last TOOL_LOG_SIZE. */
export const TOOL_LOG_SIZE = 20;
export const clip200 = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** The calls a TOOL_EXECUTING step runs, started at its step. */
export function toolsStarted(s: RunSnapshot, now: string): ToolCallRecord[] {
  const preset = new Set(s.toolRound.presetResults.map((r) => r.toolCallId));
  const started = s.toolRound.pending
    .filter((c) => !preset.has(c.id))
    .map((c): ToolCallRecord => ({ toolCallId: c.id, name: c.name, arguments: clip200(c.arguments), ...(c.edited ? { edited: true as const } : {}), ...decidedFields(s, c.id), ...(c.policy ? { policy: c.policy.action } : {}), startStep: s.counters.step, startedAt: now, endStep: null, endedAt: null, ok: null, output: null }));
  return [...s.logs.toolCalls, ...started].slice(-TOOL_LOG_SIZE);
}

/**
 * Calls a person rejected (or nobody decided on in time): answered with what the model is told, and logged as ended at
 * once, at the step into TOOL_EXECUTING, so that watchers and every stream see how each one ended.
 */
export function withRejected(s: RunSnapshot, rejected: ToolResult[], now: string): RunSnapshot {
  if (rejected.length === 0) return s;
  const step = s.counters.step + 1;
  const callOf = new Map(s.toolRound.pending.map((c) => [c.id, c]));
  const logged = rejected.map((r): ToolCallRecord => {
    const call = callOf.get(r.toolCallId);
    const policy = call?.policy ? { policy: call.policy.action } : {};
    return { toolCallId: r.toolCallId, name: r.name, arguments: clip200(call?.arguments ?? ''), rejected: true, ...decidedFields(s, r.toolCallId), ...policy, startStep: step, startedAt: now, endStep: step, endedAt: now, ok: false, output: clip200(r.content) };
  });
  return {
    ...s,
    toolRound: { ...s.toolRound, presetResults: [...s.toolRound.presetResults, ...rejected] },
    logs: { ...s.logs, toolCalls: [...s.logs.toolCalls, ...logged].slice(-TOOL_LOG_SIZE) },
  };
}

/** The calls `results` answered, ended at `step`. */
export function toolsEnded(log: ToolCallRecord[], results: ToolResult[], step: number, now: string): ToolCallRecord[] {
  const byId = new Map(results.map((r) => [r.toolCallId, r]));
  return log.map((t) => {
    const r = t.endedAt === null ? byId.get(t.toolCallId) : undefined;
    return r ? { ...t, endStep: step, endedAt: now, ok: r.ok, output: clip200(r.content) } : t;
  });
}

/** A run at `maxLoops` or `maxToolCalls`: it fails, or with `limits.onLimit: 'complete'` ends with its last text. */
export function atLimit(s: RunSnapshot, e: AgentEvent, now: string, reason: string): TransitionResult {
  if ((s.limits.onLimit ?? 'fail') === 'fail') return fail(s, e, now, reason);
  // Calls left unrun are answered, so that a follow-up turn (keepOpenMs) sends the provider a well-formed conversation.
  const unrun = s.toolRound.pending.map((c) => ({ role: 'tool' as const, toolCallId: c.id, content: `Not executed: ${reason}.` }));
  const next = { ...s, toolRound: { ...s.toolRound, pending: [] }, messages: [...s.messages, ...unrun] };
  return finish(next, S.COMPLETED, e, now, `${reason}: completed with the last text (limits.onLimit is complete)`, lastAssistantText(s));
}

/** What the model is told of a call nobody decided on within `limits.approvalTimeoutMs` (approval.onTimeout 'reject'). */
export const approvalTimedOut = (ms: number | null) => `Not executed: nobody approved this call within ${ms} ms (limits.approvalTimeoutMs). Go on without it, or ask the user.`;

/** The approval wait's reminder, raised once at `approval.reminderAt` of its window: the state stays, the view shows it. */
export function remind(s: RunSnapshot, pending: PendingApproval[], deadline: string, now: string): RunSnapshot {
  const onTimeout = s.options.approvalOnTimeout ?? 'fail';
  const toolCallIds = pending.filter((p) => !p.decision).map((p) => p.toolCallId);
  return { ...s, clocks: { ...s.clocks, approvalReminderDue: null, approvalReminder: { at: now, deadline, onTimeout, toolCallIds } } };
}

/** The approval window ran out with `approval.onTimeout: 'reject'`: the undecided calls are rejected and the run goes on. */
export function rejectUndecided(s: RunSnapshot, phase: Extract<Phase, { type: typeof S.AWAITING_APPROVAL }>, why: string, e: AgentEvent, now: string): TransitionResult {
  const timedOut = phase.pending.filter((p) => !p.decision);
  const decided = phase.pending.map((p) => (p.decision ? p : { ...p, decision: { approved: false } }));
  const rejected = decided.filter((p) => !p.decision?.approved);
  const edits = new Map(decided.filter((p) => p.decision?.arguments !== undefined).map((p) => [p.toolCallId, p.decision!.arguments!]));
  const pending = s.toolRound.pending.map((c) => (edits.has(c.id) ? { ...c, arguments: edits.get(c.id)!, edited: true as const } : c));
  const content = (p: PendingApproval) => (timedOut.includes(phase.pending[decided.indexOf(p)]) ? approvalTimedOut(s.limits.approvalTimeoutMs) : REJECTED_CALL);
  const answered = rejected.map((p) => ({ toolCallId: p.toolCallId, name: p.name, ok: false, content: content(p) }));
  const next: RunSnapshot = withRejected(
    withDeciders({ ...s, reason: { kind: 'approvalTimeout', text: `${why}: rejected (approval.onTimeout is reject)` }, approvalNote: approvalNote(decided), toolRound: { ...s.toolRound, pending } }, decided),
    answered,
    now,
  );
  return enter(next, phase.then, e, now);
}

export function fail(s: RunSnapshot, e: AgentEvent, now: string, reason: string): TransitionResult {
  return finish({ ...s, lastError: reason }, S.FAILED, e, now, reason);
}

/** Told of a pause requested during the run's last step: there was no step left to pause before. */
export const PAUSE_NOT_APPLIED = 'the pause requested during the last step was not applied: the run ended before another step';

type Ending = typeof S.COMPLETED | typeof S.FAILED | typeof S.ABORTED;

export function finish(s: RunSnapshot, to: Ending, e: AgentEvent, now: string, reason: string, answer: string | null = null): TransitionResult {
  const phase: Phase = to === S.COMPLETED ? { type: to, conversationOpen: s.options.keepOpenMs > 0 } : { type: to };
  // A pause applies before the next step; a run that ends first (not by an abort) says the pause was not applied.
  const unpaused = s.pauseRequested && to !== S.ABORTED;
  const said = unpaused && to === S.COMPLETED ? `${reason}; ${PAUSE_NOT_APPLIED}` : reason;
  const ended = unpaused ? recordRejection(s, { type: 'PAUSE' }, `${PAUSE_NOT_APPLIED} (${to})`, now) : s;
  const next = moveTo({ ...ended, counters: { ...s.counters, turns: s.counters.turns + (to === S.COMPLETED ? 1 : 0) }, reason: { kind: 'ended', text: said }, answer, pauseRequested: false }, phase, e, now);
  return ok(next, [{ type: 'cancelWork' }, ...commandsFor(next)]);
}

/**
 * The same model step again on the next of `fallbackModels`, not counted as another loop (the failed call made no
 * answer); with none left, the run fails as with any final model error.
 */
export function fallBack(s: RunSnapshot, e: Extract<AgentEvent, { type: 'MODEL_UNAVAILABLE' }>, now: string): TransitionResult {
  const [to, ...rest] = s.options.fallbackModels ?? [];
  if (to === undefined) return fail(s, e, now, `model call failed: ${e.error}`);
  const from = s.options.model ?? null;
  const switched = { from, to, error: e.error, step: s.counters.step + 1, at: now };
  const next: RunSnapshot = {
    ...s,
    counters: { ...s.counters, loops: s.counters.loops - 1 },
    options: { ...s.options, model: to, fallbackModels: rest },
    logs: { ...s.logs, modelSwitches: [...(s.logs.modelSwitches ?? []), switched] },
    reason: { kind: 'modelSwitch', text: `${from ?? "the worker's default model"} is unavailable, switched to ${to}: ${e.error}` },
  };
  return enter(next, plain(s.phase.type as ModelStep), e, now);
}

/** PAUSED instead of a model call that waits for the budget: RESUME makes the call afresh, so it is counted once. */
export function pausedBeforeCall(s: RunSnapshot, e: AgentEvent, now: string): RunSnapshot {
  const resumeTo = plain(s.phase.type as ModelStep);
  return moveTo({ ...s, counters: { ...s.counters, loops: s.counters.loops - 1 }, pauseRequested: false }, { type: S.PAUSED, resumeTo }, e, now);
}

export function moveTo(s: RunSnapshot, to: Phase, e: AgentEvent, now: string): RunSnapshot {
  const from = s.phase.type;
  const reopening = from === S.COMPLETED && (e.type === 'MESSAGE' || e.type === 'INTERRUPT');
  if (isTerminal(from) && !reopening) throw new Error(`machine bug: leaving terminal state ${from}`);
  return {
    ...s,
    clocks: { ...s.clocks, ...movedClocks(s, to.type, now) },
    phase: to,
    stateSince: now,
    counters: { ...s.counters, step: s.counters.step + 1 },
    // A wait for the provider budget belongs to the model call of the state it was in.
    quotaWait: null,
    logs: { ...s.logs, transitions: [...s.logs.transitions, { from, to: to.type, event: e.type, at: now }] },
  };
}
