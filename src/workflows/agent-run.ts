/**
 * The `agentRun` workflow: a thin interpreter of the pure machine in `machine.ts`.
 * It runs each command as an activity (or a pure function), turns the outcome into an event, and publishes
 * every state change to the `state` query, the `AgentState` search attribute and the current details.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  allHandlersFinished,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { AgentActivities } from '../activities';
import {
  CONVERSATION_UNAVAILABLE,
  type ChatMessage,
  type ConversationRef,
  type CritiqueOutcome,
  type ModelRequest,
  type ToolCall,
  type ToolResult,
} from '../common/chat';
import { FailureType, ModelErrorType } from '../common/failures';
import { AbortInputSchema, ApproveInputSchema, parseAgentRunInput, parseWith, SendMessageInputSchema, StreamDeltaSchema } from '../common/input';
import {
  abortSignal,
  approveUpdate,
  pauseSignal,
  resumeSignal,
  sendMessageUpdate,
  snapshotAtQuery,
  stateQuery,
  streamDeltaSignal,
  type AgentRunResult,
  type RunStateView,
} from '../common/messages';
import { ruleCritique } from './critic';
import { recordRejection, resumeAt, transition, type AgentCommand, type AgentEvent } from './machine';
import { recordStateDuration } from './metrics';
import { createPublisher } from './publisher';
import { carryOn, carryOver, snapshotAt, snapshotDeadline } from './resume';
import { compactionRequest, critiqueRequest, modelCallSummary, modelRequest, toolCallSummary } from './requests';
import { blankSnapshot, initialSnapshot, type RunSnapshot } from './snapshot';
import { AgentState, isTerminal } from '../common/states';

/**
 * Model calls stream for a while; compaction and the critic wait for a non-streamed answer. All heartbeat every
 * second, so the heartbeat timeout catches a dead worker (and lets cancellation in) within 5 s; a stalled stream is
 * cut by the activity's own idle timeout. Retries are bounded by time, not by a count that worker crashes would spend:
 * a kill costs an attempt and 5 s, and a provider that keeps failing ends the call after 20 minutes. Final provider
 * errors (authentication, bad request, context overflow) are not retried at all (activities/errors.ts).
 */
const modelCallOptions: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  scheduleToCloseTimeout: '20 minutes',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' }, // no attempt cap: the time bounds it
};
/** A critic that cannot answer within 2 minutes is replaced by the rule critic rather than hold the run. */
const criticOptions: ActivityOptions = { ...modelCallOptions, scheduleToCloseTimeout: '2 minutes' };
/** Tools heartbeat every second while they work; one call may take as long as its tool declares (`timeoutMs`). */
const toolOptions: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
};

const activities = proxyActivities<AgentActivities>(modelCallOptions);
/** Tools the model activity marked `local` (pure, answering in milliseconds): no task-queue round trip, no extra task. */
const localActivities = proxyLocalActivities<AgentActivities>({ startToCloseTimeout: toolOptions.startToCloseTimeout, retry: toolOptions.retry });
const CANCELLED = Symbol('cancelled');
type Work = Exclude<AgentCommand, { type: 'cancelWork' }>;
const now = () => new Date().toISOString();
/** Ends runs whose critic keeps asking for another attempt (see guards.isStuckInSetbacks). */
const NO_PROGRESS_GUARD_PATCH = 'no-progress-guard';
/** Continues as new when the history grows long; runs started before replay without it. */
const CONTINUE_AS_NEW_PATCH = 'continue-as-new';
/**
 * Cheaper steps: the AgentState search attribute and current details are written once before the run waits, not on
 * every transition, and tool calls marked `local` run as local activities. Runs started before replay without it.
 */
const LEAN_STEPS_PATCH = 'lean-steps';
/**
 * Model calls send a reference to the conversation the previous call stored and only the messages since, not the
 * whole conversation (codec/conversation-store.ts): a step's work stays flat as the run grows.
 */
const CONVERSATION_CHAIN_PATCH = 'conversation-chain';
/**
 * Real providers and people: the working-time clock stops while a person decides and an approval wait has its own
 * limit, the timer follows the snapshot's clocks, cut-off answers are continued, the run compacts before a request
 * would overflow a known context window, and the critic's confidence and tokens count. Runs started before replay without.
 */
const REAL_PROVIDERS_PATCH = 'real-providers';
const msUntil = (iso: string) => Math.max(0, Date.parse(iso) - Date.now());
/** Whether a command's work outlasts the workflow task that starts it; pure steps and local tools do not. */
const waits = (c: Work) => !(c.type === 'process' || (c.type === 'critique' && c.mode === 'rules') || (c.type === 'runTools' && c.calls.every((call) => call.local)));

export async function agentRun(rawInput: unknown): Promise<AgentRunResult> {
  const input = parseAgentRunInput(rawInput);
  let snapshot: RunSnapshot = input.ok ? initialSnapshot(input.value, now()) : blankSnapshot(now());
  // Fixed at the start: runs begun before a change keep the old behaviour on replay.
  snapshot.features = { noProgressGuard: patched(NO_PROGRESS_GUARD_PATCH), realProviders: patched(REAL_PROVIDERS_PATCH) };
  const lean = patched(LEAN_STEPS_PATCH);
  const publisher = createPublisher(lean);
  const chained = patched(CONVERSATION_CHAIN_PATCH);
  /** The conversation the last model call stored, with its first and last messages to tell whether it still applies. */
  let chain: { ref: ConversationRef; first: ChatMessage; last: ChatMessage } | undefined;
  const queue: Work[] = [];
  let work: CancellationScope | undefined;
  /** The run's timer (limits.timeoutMs, limits.approvalTimeoutMs) and when it fires. */
  let timer: CancellationScope | undefined;
  let timerDue: string | null = null;
  // Time travel: the snapshot this run began from and every event applied since; any step is a fold away.
  let base = snapshot;
  const eventLog: Array<{ event: AgentEvent; at: string }> = [];

  /** Apply an event. External events (signals, updates, the timer) may be refused; internal ones never are. */
  function dispatch(event: AgentEvent, external: boolean): void {
    const before = snapshot.state;
    const since = snapshot.stateSince;
    const at = now();
    const result = transition(snapshot, event, at);
    if (!result.ok) {
      if (!external) throw new Error(`agentRun bug: ${result.error}`); // fails the workflow task, so a fix can resume it
      log.warn('event refused', { event: event.type, state: snapshot.state, error: result.error });
      snapshot = recordRejection(snapshot, event, result.error, now());
      return;
    }
    snapshot = result.snapshot;
    followClocks();
    if (event.type !== 'STREAM_DELTA') eventLog.push({ event, at });
    for (const command of result.commands) {
      if (command.type === 'cancelWork') work?.cancel();
      else queue.push(command);
    }
    if (snapshot.state !== before) {
      recordStateDuration(before, since, at);
      // A signal or update may move a run that waits on an activity (pause, abort): shown now, not after the call.
      publisher.transitioned(snapshot, external);
    }
  }

  /** An update's validator asks the machine: a dry run of the event, so the checks live in one place. */
  function refuseUnlessAccepted(event: AgentEvent): void {
    const result = transition(snapshot, event, now());
    if (!result.ok) throw new Error(result.error);
  }

  /** Run activity work in a scope that ABORT and TIMEOUT can cancel. */
  async function cancellable<T>(fn: () => Promise<T>): Promise<T | typeof CANCELLED> {
    const scope = new CancellationScope();
    work = scope;
    try {
      return await scope.run(fn);
    } catch (err) {
      if (isCancellation(err) && scope.consideredCancelled) return CANCELLED;
      throw err;
    } finally {
      work = undefined;
    }
  }

  setHandler(stateQuery, (options) => view(snapshot, options?.includeMessages ?? false));
  setHandler(snapshotAtQuery, ({ step, includeMessages }) => view(snapshotAt(base, eventLog, snapshot, step), includeMessages ?? false));
  setHandler(abortSignal, (raw) => {
    const parsed = parseWith(AbortInputSchema, raw ?? {}, 'abort input');
    dispatch({ type: 'ABORT', reason: parsed.ok ? parsed.value.reason : undefined }, true);
  });
  setHandler(pauseSignal, () => dispatch({ type: 'PAUSE' }, true));
  setHandler(resumeSignal, () => dispatch({ type: 'RESUME' }, true));
  setHandler(streamDeltaSignal, (raw) => {
    // Built field by field: a payload must never choose the event it becomes.
    const parsed = parseWith(StreamDeltaSchema, raw, 'streamDelta');
    if (parsed.ok) dispatch({ type: 'STREAM_DELTA', ...parsed.value }, true);
    else snapshot = recordRejection(snapshot, { type: 'STREAM_DELTA', callNumber: 0, attempt: 0, text: '' }, parsed.error, now());
  });
  setHandler(
    approveUpdate,
    (raw) => {
      const { toolCallId, approved, feedback } = ApproveInputSchema.parse(raw);
      dispatch({ type: 'APPROVAL', toolCallId, approved, feedback }, true);
      return { toolCallId, approved, remaining: snapshot.pendingApproval.filter((p) => !p.decision).length };
    },
    {
      validator: (raw) => {
        const parsed = parseWith(ApproveInputSchema, raw, 'approve input');
        if (!parsed.ok) throw new Error(parsed.error);
        refuseUnlessAccepted({ type: 'APPROVAL', ...parsed.value });
      },
    },
  );
  setHandler(
    sendMessageUpdate,
    (raw) => {
      dispatch({ type: 'MESSAGE', text: SendMessageInputSchema.parse(raw).text }, true);
      return { queued: snapshot.queuedMessages.length };
    },
    {
      validator: (raw) => {
        const parsed = parseWith(SendMessageInputSchema, raw, 'sendMessage input');
        if (!parsed.ok) throw new Error(parsed.error);
        refuseUnlessAccepted({ type: 'MESSAGE', text: parsed.value.text });
      },
    },
  );

  if (!input.ok) {
    dispatch({ type: 'INVALID_INPUT', error: input.error }, false);
    publisher.beforeWait(snapshot);
    throw ApplicationFailure.create({ type: FailureType.InvalidInput, message: input.error, nonRetryable: true });
  }

  const resume = input.value.resume;
  if (resume && isTerminal(resume.snapshot.state as AgentState)) {
    throw ApplicationFailure.create({ type: FailureType.InvalidInput, message: `cannot carry on from a ${resume.snapshot.state} snapshot`, nonRetryable: true });
  }
  // Runs begun before `real-providers` keep their own timer (and its bugs) so that they replay; later runs' timer
  // follows the snapshot's clocks (followClocks), so a fork or a continued run keeps the time it had.
  const oldTimerMs = resume?.kind === 'continue' && snapshotDeadline(resume) !== null ? msUntil(snapshotDeadline(resume)!) : snapshot.limits.timeoutMs;
  if (resume) snapshot = carryOn(resume, snapshot.features, workflowInfo().workflowId, now());
  if (snapshot.features.realProviders) followClocks();
  else timer = startTimer(oldTimerMs);
  if (resume) {
    const resumed = resumeAt(snapshot);
    snapshot = resumed.snapshot;
    base = snapshot;
    queue.push(...(resumed.commands as Work[]));
    publisher.carriedOn(snapshot);
  } else {
    dispatch({ type: 'START' }, false);
  }
  const root = CancellationScope.current();
  try {
    for (;;) {
      if (isTerminal(snapshot.state)) {
        if (!(snapshot.state === AgentState.COMPLETED && snapshot.conversationOpen)) break;
        // Kept open: wait for a follow-up message, with no timeout running between turns.
        if (!snapshot.features.realProviders) timer?.cancel();
        publisher.beforeWait(snapshot);
        const reopened = await condition(() => !snapshot.conversationOpen, snapshot.options.keepOpenMs);
        if (!reopened) dispatch({ type: 'CLOSE' }, false);
        else if (!snapshot.features.realProviders) timer = startTimer(msUntil(snapshot.deadline!));
        continue;
      }
      const command = queue.shift();
      if (!command) {
        publisher.beforeWait(snapshot);
        await condition(() => queue.length > 0 || isTerminal(snapshot.state));
        continue;
      }
      if (command.type === 'callModel' && historyIsLong() && patched(CONTINUE_AS_NEW_PATCH)) {
        // A model step is a safe boundary: nothing is in flight, and the new run starts this very call.
        await condition(allHandlersFinished);
        await continueAsNew<typeof agentRun>({ ...input.value, resume: { kind: 'continue', snapshot: carryOver(snapshot) } });
      }
      const step = snapshot.step;
      if (waits(command)) publisher.beforeWait(snapshot);
      const event = await execute(command);
      // An outcome that arrives after an abort or timeout moved the run on describes nothing any more.
      if (event !== CANCELLED && snapshot.step === step) dispatch(event, false);
    }
  } catch (err) {
    if (!(isCancellation(err) && root.consideredCancelled)) throw err;
    dispatch({ type: 'ABORT', reason: 'the workflow was cancelled' }, true);
  } finally {
    timer?.cancel();
    publisher.beforeWait(snapshot);
  }

  function startTimer(ms: number): CancellationScope {
    const scope = new CancellationScope();
    void scope.run(() => sleep(ms)).then(
      () => dispatch({ type: 'TIMEOUT' }, true),
      () => undefined, // the run ended first
    );
    return scope;
  }

  /**
   * With `real-providers`, one timer for the earliest of the run's clocks (working time, an approval wait), moved
   * whenever the machine moves them: the machine decides what a clock is, the workflow only keeps the timer on it.
   */
  function followClocks(): void {
    if (!snapshot.features.realProviders) return;
    const due = [snapshot.deadline, snapshot.approvalDeadline].filter((d): d is string => d !== null).sort()[0] ?? null;
    if (due === timerDue) return;
    timer?.cancel();
    timerDue = due;
    timer = due === null ? undefined : startTimer(msUntil(due));
  }

  function historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= snapshot.limits.historyEvents;
  }

  const result: AgentRunResult = {
    status: snapshot.state as AgentRunResult['status'],
    answer: snapshot.answer,
    reason: snapshot.reason,
    usage: snapshot.usage,
    loops: snapshot.loops,
    toolCalls: snapshot.toolCalls,
  };
  if (snapshot.state === AgentState.FAILED) {
    throw ApplicationFailure.create({ type: FailureType.AgentRunFailed, message: snapshot.reason ?? 'failed', nonRetryable: true, details: [result] });
  }
  return result;

  async function execute(command: Work): Promise<AgentEvent | typeof CANCELLED> {
    switch (command.type) {
      case 'process':
        return { type: 'PROCESS' };
      case 'callModel':
        return callModel(command.purpose, command.callNumber);
      case 'runTools':
        return runTools(command.calls);
      case 'critique':
        return critique(command.mode);
      case 'compact': {
        const request = compactionRequest(snapshot, command.keepRecent);
        const summary = `compaction of ${request.messages.length} messages`;
        const outcome = await cancellable(() => activities.compactContext.executeWithOptions({ ...modelCallOptions, summary }, [request])).catch(
          (err: unknown) => ({ failed: failureMessage(err) }),
        );
        if (outcome === CANCELLED) return CANCELLED;
        return 'failed' in outcome ? { type: 'COMPACTION_FAILED', error: outcome.failed } : { type: 'COMPACTED', result: outcome };
      }
    }
  }

  async function callModel(purpose: 'plan' | 'respond', callNumber: number): Promise<AgentEvent | typeof CANCELLED> {
    const request = modelRequest(snapshot, purpose, callNumber);
    const sent = request.messages;
    try {
      const call = (r: ModelRequest) =>
        cancellable(() => activities.callModel.executeWithOptions({ ...modelCallOptions, summary: modelCallSummary(purpose, callNumber) }, [r]));
      const chainedRequest = purpose === 'respond' && chained ? withChain(request) : undefined;
      const response = chainedRequest
        ? await call(chainedRequest).catch((err: unknown) => {
            if (failureType(err) !== CONVERSATION_UNAVAILABLE) throw err;
            chain = undefined; // this worker cannot read the chain back: send everything, and start a new chain
            return call({ ...request, chain: {} });
          })
        : await call(request);
      if (response === CANCELLED) return CANCELLED;
      if (chainedRequest && response.conversation && response.conversation.count === sent.length && sent.length > 0) {
        chain = { ref: response.conversation, first: sent[0], last: sent[sent.length - 1] };
      }
      return purpose === 'plan' ? { type: 'PLAN_READY', response } : { type: 'MODEL_RESPONDED', response };
    } catch (err) {
      if (failureType(err) === ModelErrorType.ContextOverflow) return { type: 'CONTEXT_OVERFLOW', error: failureMessage(err) };
      return { type: 'MODEL_FAILED', error: failureMessage(err) };
    }
  }

  /**
   * The request with a chain: the stored conversation and the messages since, while the conversation still begins
   * with it (compaction and continue-as-new start a new one); otherwise every message, and the worker starts a chain.
   */
  function withChain(request: ModelRequest): ModelRequest {
    const m = request.messages;
    if (chain && m.length >= chain.ref.count && m[0] === chain.first && m[chain.ref.count - 1] === chain.last) {
      return { ...request, messages: m.slice(chain.ref.count), chain: { base: chain.ref } };
    }
    return { ...request, chain: {} };
  }

  async function runTools(calls: ToolCall[]): Promise<AgentEvent | typeof CANCELLED> {
    const first = snapshot.toolCalls + 1;
    const results = await cancellable(() =>
      Promise.all(
        calls.map((call, i) => {
          const request = { call, allowed: snapshot.options.tools, callNumber: first + i };
          const run =
            lean && call.local
              ? localActivities.executeTool(request)
              : activities.executeTool.executeWithOptions(
                  { ...toolOptions, ...(call.timeoutMs ? { startToCloseTimeout: call.timeoutMs } : {}), summary: toolCallSummary(call) },
                  [request],
                );
          return run.catch((err: unknown): ToolResult => {
            if (isCancellation(err)) throw err;
            return { toolCallId: call.id, name: call.name, ok: false, content: `Error: ${failureMessage(err)}` };
          });
        }),
      ),
    );
    return results === CANCELLED ? CANCELLED : { type: 'TOOLS_DONE', results };
  }

  async function critique(mode: 'rules' | 'model'): Promise<AgentEvent | typeof CANCELLED> {
    if (mode === 'rules') return { type: 'CRITIQUE_DONE', decision: ruleCritique(snapshot) };
    const request = critiqueRequest(snapshot);
    const summary = `model critique of the answer (call #${request.callNumber})`;
    const options = snapshot.features.realProviders ? criticOptions : modelCallOptions;
    const outcome = await cancellable(() => activities.critiqueAnswer.executeWithOptions({ ...options, summary }, [request])).catch(
      (err: unknown) => ({ failed: failureMessage(err) }),
    );
    if (outcome === CANCELLED) return CANCELLED;
    if ('failed' in outcome) return { type: 'CRITIC_FAILED', error: outcome.failed };
    const { usage, ...decision } = outcome as CritiqueOutcome;
    return { type: 'CRITIQUE_DONE', decision, ...(usage ? { usage } : {}) };
  }
}

function view(s: RunSnapshot, includeMessages: boolean): RunStateView {
  const { messages, ...rest } = s;
  return { ...rest, messageCount: messages.length, ...(includeMessages ? { messages } : {}) };
}

/** The innermost application failure's message: what the model or the tool actually said. */
function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}
