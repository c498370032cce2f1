/**
 * Running the machine's work commands as activities and turning each outcome into an event. Activity option
 * profiles live here. Tools marked `local` (pure, fast) run as local activities, when the model call has not run them.
 *
 * Inline local tools: the model call is asked to run its answer's calls of `local` tools and to answer with their
 * results, which reach the machine with the response. The machine decides which it keeps (ran-ahead.ts), and which
 * calls run (limits, approvals, the loop guard): `runTools` takes the result a call carries (`ranAhead`) and runs any
 * other. A step of a model call and a local tool is then one workflow activation instead of two, with no local
 * activity (BENCHMARKS.md).
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  startChild,
  TimeoutFailure,
  type ActivityOptions,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import { RetryState } from '@temporalio/common';
import type { AgentActivities } from '../activities';
import type { ChildOutcome, ChildRequest, CritiqueOutcome, ModelRequest, QuotaGrantLease, ReplayedAnswers, ToolRequest, ToolResult } from '../common/chat';
import { emptyUsage, isQuotaWait, isRecordedCritique, isRecordedResponse, isRecordedSummary } from '../common/chat-helpers';
import { WORKFLOW_TYPE } from '../common/constants';
import { DEFAULT_TIMEOUTS, type RunTimeouts } from '../common/input';
import { pauseSignal, resumeSignal, type AgentRunResult } from '../common/messages';
import { AgentState } from '../common/states';
import { ModelErrorType } from '../common/failures';
import { COMPACTION_CALL, criticCall, type ModelCallKey, type ModelCallSinks } from '../common/sinks';
import { inModelOrder } from '../common/tool-order';
import { INTERRUPTED_TOOL, modelFailure, type AgentEvent, type WorkCommand } from '../machine/machine';
import type { CutText } from '../machine/types';
import { modelCallSummary, toolCallSummary } from '../machine/requests';
import { tenantPriority } from '../common/fairness';
import { inheritedOwner, runTenant } from './owner';

/**
 * Model calls stream for a while; compaction and the critic wait for a non-streamed answer. All heartbeat (model calls
 * every 800 ms, for interrupts that reach them from another worker), so the heartbeat timeout catches a dead worker
 * within 5 s; a stalled stream is cut by the activity's own idle timeout. Retries are bounded by time, not by a count
 * that worker crashes would spend: a kill costs an attempt and 5 s, and a provider that keeps failing ends the call
 * after the run's `timeouts.modelCallMs` (20 minutes; then the run may move to a fallback model: modelCallFailure).
 * Final provider errors (authentication, bad request, context overflow) are not retried at all (activities/errors.ts).
 */
const modelCallOptions: ActivityOptions = {
  startToCloseTimeout: DEFAULT_TIMEOUTS.modelAttemptMs,
  scheduleToCloseTimeout: DEFAULT_TIMEOUTS.modelCallMs,
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' }, // no attempt cap: the time bounds it
};

/**
 * The options of a run's model requests under its timeouts (common/input.ts, `timeouts`): an attempt of each is cut at
 * `modelAttemptMs`; a critic that cannot answer within `criticMs` is replaced by the rule critic rather than hold the run.
 */
function modelRequestOptions(timeouts: RunTimeouts = DEFAULT_TIMEOUTS): { model: ActivityOptions; critic: ActivityOptions; compaction: ActivityOptions } {
  const model = { ...modelCallOptions, startToCloseTimeout: timeouts.modelAttemptMs, scheduleToCloseTimeout: timeouts.modelCallMs };
  return { model, critic: { ...model, scheduleToCloseTimeout: timeouts.criticMs }, compaction: { ...model, scheduleToCloseTimeout: timeouts.compactionMs } };
}
/**
 * A model call the fleet's budget sent back once waits in `awaitQuota`, whose heartbeat timeout lets a flood of
 * waiting calls beat every 10 s instead of every 1.67 s (activities/model.ts): the call it hands the grant to keeps
 * the 5 s that catches a dead worker mid-stream. An attempt waits up to 4 minutes (activities/quota.ts), the wait as a
 * whole no longer than the call's `modelCallMs`; the run waits for its cancellation, as for the call's, so a grant
 * that comes with the stop goes back to the budget before the run moves on.
 */
const quotaWaitOptions = (model: ActivityOptions): ActivityOptions => ({
  startToCloseTimeout: '5 minutes',
  scheduleToCloseTimeout: model.scheduleToCloseTimeout,
  heartbeatTimeout: '30 seconds',
  retry: modelCallOptions.retry,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** Tools heartbeat every second while they work; one call may take as long as its tool declares (`timeoutMs`). */
const toolOptions: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
};

const activities = proxyActivities<AgentActivities>(modelCallOptions);
/** Tools the model activity marked `local` (pure, answering in milliseconds): no task-queue round trip, no extra task. */
const localToolOptions = { startToCloseTimeout: toolOptions.startToCloseTimeout, retry: toolOptions.retry };
const localActivities = proxyLocalActivities<AgentActivities>(localToolOptions);
/** A sink, not a command: the worker that runs the model call being cancelled stops it at once (activities/calls-in-flight.ts). */
const { modelCalls } = proxySinks<ModelCallSinks>();

type ModelOutcome = Awaited<ReturnType<AgentActivities['callModel']>>;

/** The outcome of work that ABORT or TIMEOUT cancelled: it describes nothing any more. */
export const CANCELLED = Symbol('cancelled');
export type Outcome = AgentEvent | typeof CANCELLED;

export interface Effects {
  /** Run one command's activities; their outcome as the event the machine takes next. */
  run(command: Exclude<WorkCommand, { type: 'awaitMessage' }>): Promise<Outcome>;
  /** The command's outcome when it needs no work (tool calls the model call ran already), else undefined. */
  ready(command: WorkCommand): Outcome | undefined;
  /** Whether the command's work outlasts the workflow task that starts it (local tools do not). */
  waits(command: WorkCommand): boolean;
  /** Cancel the work in flight, if any. */
  cancel(): void;
  /**
   * Stop the model call in flight, if any, and resolve with the text it had streamed once its cancellation (or its
   * answer, if it had just finished) reaches the run; `undefined` at once when no model call is in flight.
   */
  cut(): Promise<CutText | undefined>;
  /** The text of the last model call stopped so far (a cancelled workflow stops its call without `cut`). */
  lastCut(): CutText | undefined;
  /** Stop the running tool calls marked `cancellable`: each answers INTERRUPTED_TOOL; the others run on. */
  interruptTools(): void;
  /** Pause (or resume) the child runs now running, as their parent was paused (or resumed). */
  pauseChildren(paused: boolean): void;
  /** What a what-if fork still has to apply, for the run it continues as new into; undefined: nothing. */
  whatIfLeft(): WhatIf | undefined;
}

/**
 * A what-if fork's part that the interpreter applies (the input's `resume.edits.toolResults` and `resume.replay`): the
 * recorded answers go with each model request (a model call, the model critic, a compaction; each gets those of its
 * kind) while the run's requests are the original's (the activity decides, by the request's hash); the first answer
 * of them not replayed drops them. A custom critic is the worker's code, not a provider request: it always runs, and
 * its decision leaves them be (a different one makes the next request differ, which then ends them). The named tool
 * results replace the results when they come.
 */
export interface WhatIf {
  replay?: ReplayedAnswers;
  toolResults?: Record<string, string>;
}

/**
 * A step makes few promises, each of which the SDK's promise hook captures a stack for (BENCHMARKS.md, issue 26): the
 * model call's outcome is one `then` on the activity, not three nested awaits, and tool calls the model call ran
 * already are an outcome at once (`ready`), with no await.
 */
export function createEffects(whatIf: WhatIf = {}, inputTenant?: string, timeouts: () => RunTimeouts | undefined = () => undefined, priority?: number): Effects {
  /** The run's tenant; its activities and children queue as its own on the task queue (Temporal's fairness key). */
  const tenant = runTenant(inputTenant);
  const fair = tenantPriority(tenant);
  /** The options under the run's timeouts, built again only when those change (a fork's carried snapshot brings its own). */
  let built: { timeouts: RunTimeouts | undefined; options: ReturnType<typeof modelRequestOptions> } | undefined;
  const requestOptions = () => {
    const now = timeouts();
    if (built?.timeouts !== now || !built) built = { timeouts: now, options: modelRequestOptions(now) };
    return built.options;
  };
  let replay = whatIf.replay && Object.keys(whatIf.replay).length > 0 ? { ...whatIf.replay } : undefined;
  const editedResults = whatIf.toolResults ?? {};
  /**
   * A model request answered, with the hashes of the recorded answers it used when all its answers were replayed: the
   * others are left for the requests to come. An answer not replayed: the run's requests went their own way, and the
   * recorded answers are of no more use.
   */
  function answered(replayed: boolean, used: readonly string[]): void {
    if (!replay) return;
    if (!replayed || used.length === 0) {
      replay = undefined;
      return;
    }
    const rest = { ...replay };
    for (const hash of used) delete rest[hash];
    replay = Object.keys(rest).length > 0 ? rest : undefined;
  }
  /** The recorded answers of one kind, for the request that can use them; none: undefined. */
  function recorded(kind: (answer: object) => boolean): ReplayedAnswers | undefined {
    const answers = replay && Object.fromEntries(Object.entries(replay).filter(([, answer]) => kind(answer)));
    return answers && Object.keys(answers).length > 0 ? answers : undefined;
  }
  /**
   * The last model call's budget wait said the run waits apart (`waitsApart`: its activity worker has `awaitQuota`):
   * the call that asks again waits there first. From the activity's answer in history, so replays take the same road.
   */
  let waitsApart = false;
  function modelAnswered(outcome: ModelOutcome): void {
    if (isQuotaWait(outcome)) waitsApart = outcome.waitsApart === true;
    else answered(outcome.replayed === true, outcome.requestHash ? [outcome.requestHash] : []);
  }
  const edited = (results: ToolResult[]): ToolResult[] =>
    results.map((r) => (editedResults[r.toolCallId] === undefined ? r : { ...r, ok: true, content: editedResults[r.toolCallId] }));

  /**
   * One scope for all the run's work until `cancel` cancels it. A scope costs three promises, each of which the SDK's
   * promise hook captures a stack for; one a step was a tenth of a step's workflow CPU (BENCHMARKS.md, issue 26).
   */
  let scope: CancellationScope | undefined;
  let working = false;
  /** The model request in flight (a model call, the critic, a compaction), which `cancel` also stops here if it runs here. */
  let calling: ModelCallKey | undefined;
  const local = (r: ToolRequest) => r.call.local === true;
  /** The scopes of running calls an interrupting message may stop, and those it stopped. */
  const stoppable = new Set<CancellationScope>();
  const stopped = new WeakSet<CancellationScope>();

  /** Run activity work in a scope that `cancel` can cancel; `call`: the model request it makes, which `cancel` stops too. */
  async function cancellable<T>(fn: () => Promise<T>, call?: ModelCallKey): Promise<T | typeof CANCELLED> {
    if (!scope || scope.consideredCancelled) scope = new CancellationScope();
    const work = scope;
    working = true;
    calling = call;
    try {
      return await work.run(fn);
    } catch (err) {
      if (isCancellation(err) && work.consideredCancelled) return CANCELLED;
      throw err;
    } finally {
      working = false;
      calling = undefined;
    }
  }

  function runTool(request: ToolRequest): Promise<ToolResult> {
    const { call } = request;
    const run = local(request)
      ? localActivities.executeTool.executeWithOptions({ ...localToolOptions, summary: toolCallSummary(call) }, [request]) // the UI names it
      : activities.executeTool.executeWithOptions(
          { ...toolOptions, ...fair, ...(call.timeoutMs ? { startToCloseTimeout: call.timeoutMs } : {}), summary: toolCallSummary(call) },
          [request],
        );
    return run.catch((err: unknown): ToolResult => {
      if (isCancellation(err)) throw err;
      return { toolCallId: call.id, name: call.name, ok: false, content: `Error: ${failureMessage(err)}` };
    });
  }

  /** The child runs now running, for pause and resume. */
  const children = new Set<ChildWorkflowHandle<() => Promise<AgentRunResult>>>();

  /**
   * A call of a named agent: a child `agentRun` of the agent, with the call's prompt and what remains of the budget.
   * Cancelling the work cancels the child (it ends ABORTED); its answer, or why it did not answer, is the tool result.
   */
  async function runChild(request: ToolRequest, child: ChildRequest): Promise<ToolResult> {
    const { call } = request;
    const answer = (ok: boolean, content: string, outcome?: ChildOutcome): ToolResult => ({ toolCallId: call.id, name: call.name, ok, content, ...(outcome ? { child: outcome } : {}) });
    const prompt = promptOf(call.arguments);
    if (prompt === null) return answer(false, `Error: invalid arguments for ${call.name}: send {"prompt": "<the task>"}`);
    const handle = await startChild<() => Promise<AgentRunResult>>(WORKFLOW_TYPE, {
      workflowId: child.workflowId,
      // The child draws on the fleet's budget as its parent's tenant, at its parent's priority (a batch's stays batch).
      args: [{ agent: child.agent, prompt, ...(child.budget ? { budget: child.budget } : {}), ...(tenant ? { tenant } : {}), ...(priority !== undefined ? { priority } : {}) }] as never,
      ...inheritedOwner(),
      ...fair,
    });
    children.add(handle);
    const outcome = (r: AgentRunResult): ChildOutcome => ({ workflowId: child.workflowId, agent: child.agent, state: r.status, usage: r.usage });
    try {
      const result = await handle.result();
      if (result.status === AgentState.COMPLETED) return answer(true, result.answer ?? result.lastText ?? '', outcome(result));
      return answer(false, `Error: agent ${child.agent} ended ${result.status}: ${result.reason ?? ''}`, outcome(result));
    } catch (err) {
      if (isCancellation(err)) throw err;
      const failed = failedRun(err);
      const ended: ChildOutcome = failed ? outcome(failed) : { workflowId: child.workflowId, agent: child.agent, state: AgentState.FAILED, usage: { ...emptyUsage(), modelCalls: 0, costUsd: 0 } };
      return answer(false, `Error: agent ${child.agent} failed: ${failureMessage(err)}`, ended);
    } finally {
      children.delete(handle);
    }
  }

  /** A call in its own scope when it may be stopped: cancelled by `interruptTools`, it answers instead of failing the step. */
  async function runStoppable(request: ToolRequest): Promise<ToolResult> {
    if (!request.call.cancellable) return runTool(request);
    const scope = new CancellationScope();
    stoppable.add(scope);
    try {
      return await scope.run(() => runTool(request));
    } catch (err) {
      if (isCancellation(err) && stopped.has(scope)) return { toolCallId: request.call.id, name: request.call.name, ok: false, content: INTERRUPTED_TOOL, interrupted: true };
      throw err;
    } finally {
      stoppable.delete(scope);
    }
  }

  const ranAhead = (r: ToolRequest) => r.call.ranAhead !== undefined;
  const toolsRanAlready = (requests: ToolRequest[]): AgentEvent => ({ type: 'TOOLS_DONE', results: edited(requests.map((r) => r.call.ranAhead!)) });

  /** The model's answer as the machine's event; the results of the local tools it ran travel with it (the machine keeps or drops them). */
  function modelResponded(request: ModelRequest, outcome: ModelOutcome): AgentEvent {
    if (isQuotaWait(outcome)) return { type: 'QUOTA_WAIT', ...outcome.quotaWait };
    return request.purpose === 'plan' ? { type: 'PLAN_READY', response: outcome } : { type: 'MODEL_RESPONDED', response: outcome };
  }

  function modelCall(command: Extract<WorkCommand, { type: 'callModel' }>): { request: ModelRequest; call: () => Promise<ModelOutcome> } {
    const responses = recorded(isRecordedResponse);
    const request = { ...command.request, runLocalTools: true, ...(responses ? { replay: responses } : {}) };
    const summary = modelCallSummary(request.purpose, request.callNumber);
    // Waits for the cancellation: its details carry the text streamed so far (the only way it reaches history).
    const { model } = requestOptions();
    const options = { ...model, ...fair, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED, summary };
    const call = (r: ModelRequest) => activities.callModel.executeWithOptions(options, [r]);
    if (!waitsApart || request.quota?.queuedAt === undefined) return { request, call: () => call(request) };
    const wait = { ...quotaWaitOptions(model), ...fair, summary: `quota wait of ${summary}` };
    const granted = (grant: QuotaGrantLease) => ({ ...request, quota: { ...request.quota, grant } });
    return { request, call: () => activities.awaitQuota.executeWithOptions(wait, [request]).then((w) => (isQuotaWait(w) ? w : call(w.quotaGrant ? granted(w.quotaGrant) : request))) };
  }

  /** The model call `cut` is stopping, and who waits for its text. */
  let cutting: { promise: Promise<CutText | undefined>; resolve: (cut: CutText | undefined) => void } | undefined;
  let lastCut: CutText | undefined;
  /** A model call ended after its scope was cancelled: what it streamed is handed to whoever stopped it. */
  const ended = (cut: CutText | undefined) => {
    lastCut = cut;
    cutting?.resolve(cut);
    cutting = undefined;
  };

  /** `cancellable` and the failure's event in one `then`, with no async function around it: four promises fewer a call. */
  function callModelDirect(command: Extract<WorkCommand, { type: 'callModel' }>): Promise<Outcome> {
    const { request, call } = modelCall(command);
    if (!scope || scope.consideredCancelled) scope = new CancellationScope();
    const work = scope;
    working = true;
    calling = request.callNumber;
    const callNumber = request.callNumber;
    return work.run(call).then(
      (outcome) => {
        working = false;
        calling = undefined;
        modelAnswered(outcome);
        if (!work.consideredCancelled) return modelResponded(request, outcome);
        // Answered before the cancellation reached it: what stopped it gets the whole text, as a cut.
        ended(isQuotaWait(outcome) ? undefined : { callNumber, text: outcome.text });
        return CANCELLED;
      },
      (err: unknown) => {
        working = false;
        calling = undefined;
        if (!work.consideredCancelled) return modelCallFailure(err);
        // Its cancellation, or a failure (a timeout: its worker died) that came first: it describes nothing any more.
        ended(cutOf(callNumber, err));
        return CANCELLED;
      },
    );
  }

  const effects: Effects = {
    whatIfLeft: () => (replay || Object.keys(editedResults).length > 0 ? { ...(replay ? { replay } : {}), ...(Object.keys(editedResults).length > 0 ? { toolResults: editedResults } : {}) } : undefined),
    pauseChildren: (paused) => {
      // A child that has just ended refuses the signal; nothing to do then.
      for (const handle of children) handle.signal(paused ? pauseSignal : resumeSignal).catch(() => undefined);
    },
    interruptTools: () => {
      for (const scope of stoppable) {
        stopped.add(scope);
        scope.cancel();
      }
    },
    waits: (command) => command.type !== 'awaitMessage' && !(command.type === 'runTools' && command.requests.every(local)),
    ready: (command) => (command.type === 'runTools' && command.requests.every(ranAhead) ? toolsRanAlready(command.requests) : undefined),
    cancel: () => {
      if (!working) return;
      if (calling !== undefined) modelCalls.stop(calling);
      scope?.cancel();
    },
    cut: () => {
      if (!working || typeof calling !== 'number') return Promise.resolve(undefined);
      if (!cutting) {
        let resolve!: (cut: CutText | undefined) => void;
        const promise = new Promise<CutText | undefined>((r) => (resolve = r));
        cutting = { promise, resolve };
      }
      const { promise } = cutting;
      effects.cancel();
      return promise;
    },
    lastCut: () => lastCut,
    // Not async: a model call's outcome is the one promise `callModelDirect` returns.
    run: (command) => (command.type === 'callModel' ? callModelDirect(command) : runWork(command)),
  };
  return effects;

  async function runWork(command: Exclude<WorkCommand, { type: 'callModel' | 'awaitMessage' }>): Promise<Outcome> {
    switch (command.type) {
      case 'runTools': {
        const one = (r: ToolRequest) => r.call.ranAhead ?? (r.child ? runChild(r, r.child) : runStoppable(r));
        const results = await cancellable(() => inTurnOrder(command.requests, one, command.concurrent));
        return results === CANCELLED ? CANCELLED : { type: 'TOOLS_DONE', results: edited(results) };
      }
      case 'critique': {
        const custom = command.request.critic !== undefined;
        // A custom critic is the worker's code, not a provider request: nothing of it was recorded, nothing is replayed.
        const decisions = custom ? undefined : recorded(isRecordedCritique);
        const request = decisions ? { ...command.request, replay: decisions } : command.request;
        const summary = `${request.critic ? `critique by ${request.critic}` : 'model critique'} of the answer (call #${request.callNumber})`;
        const activity = custom ? activities.customCritique : activities.critiqueAnswer;
        const critic = () => activity.executeWithOptions({ ...requestOptions().critic, ...fair, summary }, [request]);
        const outcome = await cancellable(critic, criticCall(request.callNumber)).catch((err: unknown) => ({ failed: err }));
        if (outcome === CANCELLED) return CANCELLED;
        if ('failed' in outcome) return { type: 'CRITIC_FAILED', error: failureMessage(outcome.failed) };
        const { usage, requestHash, replayed, ...decision } = outcome as CritiqueOutcome;
        if (!custom) answered(replayed === true, requestHash ? [requestHash] : []);
        return { type: 'CRITIQUE_DONE', decision, ...(usage ? { usage } : {}), ...(replayed ? { replayed } : {}) };
      }
      case 'compact': {
        const summaries = recorded(isRecordedSummary);
        const request = summaries ? { ...command.request, replay: summaries } : command.request;
        const summary = `compaction of ${request.messages.length} messages`;
        const compaction = () => activities.compactContext.executeWithOptions({ ...requestOptions().compaction, ...fair, summary }, [request]);
        const outcome = await cancellable(compaction, COMPACTION_CALL).catch((err: unknown) => ({ failed: err }));
        if (outcome === CANCELLED) return CANCELLED;
        if ('failed' in outcome) return { type: 'COMPACTION_FAILED', error: failureMessage(outcome.failed) };
        // The summaries by hash are for forks of this run, which read them from history; the run itself needs only the result.
        const { summaries: used, ...result } = outcome;
        answered(result.replayed === true, Object.keys(used ?? {}));
        return { type: 'COMPACTED', result };
      }
    }
  }
}

/** Each batch of the turn (`inModelOrder`) after the one before it; the results in the order of the calls. */
async function inTurnOrder(requests: ToolRequest[], one: (r: ToolRequest) => ToolResult | Promise<ToolResult>, concurrent: boolean | undefined): Promise<ToolResult[]> {
  const results: ToolResult[] = [];
  for (const batch of inModelOrder(requests, (r) => r.call, concurrent)) results.push(...(await Promise.all(batch.map(one))));
  return results;
}

/** The prompt a parent's model gave a named agent, or null when the arguments hold none. */
function promptOf(args: string): string | null {
  try {
    const parsed = JSON.parse(args) as { prompt?: unknown };
    return typeof parsed?.prompt === 'string' && parsed.prompt.trim() !== '' ? parsed.prompt : null;
  } catch {
    return null;
  }
}

/** The result a FAILED child carried in its failure's details (view.ts, runResult). */
function failedRun(err: unknown): AgentRunResult | undefined {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : undefined;
  const details = cause instanceof ApplicationFailure ? cause.details : undefined;
  const result = details?.[0] as AgentRunResult | undefined;
  return result && typeof result === 'object' && 'usage' in result ? result : undefined;
}

/**
 * What a stopped model call had streamed: the details of its cancellation (activities/model.ts), or, when its worker
 * died before it heard of it, of its last heartbeat (the attempt timed out).
 */
function cutOf(callNumber: number, err: unknown): CutText | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const details = cause instanceof CancelledFailure ? cause.details[0] : cause instanceof TimeoutFailure ? cause.lastHeartbeatDetails : undefined;
  const text = (details as { text?: unknown } | undefined)?.text;
  return typeof text === 'string' ? { callNumber, text } : undefined;
}

/** The innermost application failure's message: what the model or the tool actually said. */
function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure || err instanceof ChildWorkflowFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * A model call that ran out of time (its `timeouts.modelCallMs` schedule-to-close bound, retries and all) spent its retries as surely
 * as one that failed ten times: the run may move to a fallback model (MODEL_UNAVAILABLE).
 */
function modelCallFailure(err: unknown): AgentEvent {
  if (ranOutOfTime(err)) {
    return modelFailure(ModelErrorType.RetriesExhausted, `the model call ran out of time: ${failureMessage(err)}`);
  }
  return modelFailure(failureType(err), failureMessage(err));
}

/** Whether an activity ended by its timeouts: Temporal gives up retrying (TIMEOUT) or the last attempt timed out. */
const ranOutOfTime = (err: unknown): boolean => err instanceof ActivityFailure && (err.retryState === RetryState.TIMEOUT || err.cause instanceof TimeoutFailure);

function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}
