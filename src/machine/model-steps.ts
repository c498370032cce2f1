/** Rows of IDLE and the model steps (PLANNING, STREAMING): a call's answer, its failures, waits for the provider budget. */
import { withRanAhead } from './ran-ahead';
import { addMs } from './clocks';
import { chainAfter } from './chain';
import { calibrated, continued, withResponseUsage } from './responses';
import type { ModelStep, RunSnapshot } from './snapshot';
import type { ModelResponse } from '../common/chat';
import { commandsFor, enter, fail, fallBack, INTERRUPTED_MARK, ok, pausedBeforeCall, plain, S } from './core';
import { cutText, pauseAlreadyRequested, refusePause } from './running';
import { action, type EventOf, guard, REJECTED, row, SELF, type Row } from './table';
import { parsePlan, planText, withNewSteps } from './plan';

const plans = guard<'START'>('plans', (s) => s.options.plan);
const startRun = action<'START'>('startRun', (s, e, now) =>
  enter({ ...s, clocks: { ...s.clocks, work: { state: 'running', deadline: addMs(now, s.limits.timeoutMs) } } }, plain(s.options.plan ? S.PLANNING : S.STREAMING), e, now),
);
const refuseInput = action<'INVALID_INPUT'>('failInvalidInput', (s, e, now) => fail(s, e, now, e.error));

export const IDLE_ROWS: readonly Row[] = [
  row('START', plans, S.PLANNING, startRun),
  row('START', null, S.STREAMING, startRun),
  row('INVALID_INPUT', null, S.FAILED, refuseInput),
];

/** The run's `stream` once its call answered: the attempt that answered (a retry's, when one did). */
const answeredBy = (s: RunSnapshot, r: ModelResponse): RunSnapshot['stream'] => (s.stream && r.attempt ? { ...s.stream, attempt: r.attempt } : s.stream);

/** The plan joins the conversation as text, and the run carries it out. */
function withPlan(s: RunSnapshot, e: EventOf<'PLAN_READY'>, plan: string): RunSnapshot {
  const { planRetry: _retry, ...rest } = s;
  const next = withResponseUsage(
    { ...rest, ...calibrated(s, e.response), plan, counters: { ...s.counters, overflowsInARow: 0 }, partialText: e.response.text, stream: answeredBy(s, e.response) },
    e.response,
  );
  next.messages = [...s.messages, { role: 'assistant', content: `Plan:\n${plan}` }, { role: 'user', content: 'Carry out the plan step by step.' }];
  return next;
}

/** A free-text plan (`plan: true`), or a steps plan still malformed when asked again: taken as text. */
const recordPlan = action<'PLAN_READY'>('recordPlan', (s, e, now) => enter(withPlan(s, e, e.response.text.trim()), plain(S.STREAMING), e, now));

/** `plan: 'steps'`: the answer passes the plan's schema. */
const planInSteps = guard<'PLAN_READY'>('planInSteps', (s, e) => s.options.planSteps === true && parsePlan(e.response.text).ok);
/** `plan: 'steps'`: the answer fails the plan's schema, and has not been asked for again yet. */
const planMalformedFirstTime = guard<'PLAN_READY'>('planMalformedFirstTime', (s, e) => s.options.planSteps === true && !s.planRetry && !parsePlan(e.response.text).ok);

/** The steps, the first of them current, after those a replan keeps (done and replanned ones). */
const recordPlanSteps = action<'PLAN_READY'>('recordPlanSteps', (s, e, now) => {
  const parsed = parsePlan(e.response.text);
  const titles = parsed.ok ? parsed.steps : [];
  return enter({ ...withPlan(s, e, planText(titles)), planSteps: withNewSteps(s.planSteps, titles) }, plain(S.STREAMING), e, now);
});

/** Asks once more, with the answer and what is wrong with it (requests.ts); the call counts as any other. */
const askPlanAgain = action<'PLAN_READY'>('askPlanAgain', (s, e, now) => {
  const parsed = parsePlan(e.response.text);
  const error = parsed.ok ? '' : parsed.error;
  const next = withResponseUsage({ ...s, ...calibrated(s, e.response), planRetry: { answer: e.response.text, error }, partialText: e.response.text }, e.response);
  return enter(next, plain(S.PLANNING), e, now);
});

/** The answer joins the conversation; its tool calls wait to be processed (PROCESSING resolves at once). */
const recordResponse = action<'MODEL_RESPONDED'>('recordResponse', (s, e, now) => {
  const { text, toolCalls } = e.response;
  const next = withResponseUsage(
    { ...s, ...calibrated(s, e.response), chain: chainAfter(s, e.response), toolRound: { ...s.toolRound, pending: withRanAhead(s, toolCalls, e.response.toolResults), lastResults: [] }, counters: { ...s.counters, overflowsInARow: 0 }, partialText: text, stream: answeredBy(s, e.response) },
    e.response,
  );
  next.messages = [...s.messages, { role: 'assistant', content: text || null, ...(toolCalls.length ? { toolCalls } : {}) }];
  const { continuations, ...changes } = continued(s, e.response);
  Object.assign(next, changes);
  if (continuations !== undefined) next.counters = { ...next.counters, continuations };
  return enter(next, plain(S.PROCESSING), e, now);
});

const failModelCall = action<'MODEL_FAILED' | 'MODEL_UNAVAILABLE'>('failModelCall', (s, e, now) => fail(s, e, now, `model call failed: ${e.error}`));
/** One of `fallbackModels` is left to move to. */
const hasFallbackModel = guard<'MODEL_UNAVAILABLE'>('hasFallbackModel', (s) => (s.options.fallbackModels ?? []).length > 0);
const switchModel = action<'MODEL_UNAVAILABLE'>('switchToFallbackModel', fallBack);
const failUnknownTools = action<'UNKNOWN_TOOLS'>('failUnknownTools', (s, e, now) => {
  // No request was made: the call the way into this step counted is taken back.
  const loops = s.counters.loops - 1;
  return fail({ ...s, counters: { ...s.counters, loops }, stream: loops > 0 ? { callNumber: loops, attempt: 1 } : null }, e, now, `no model call was made: ${e.error}`);
});

const overflowedTwice = guard<'CONTEXT_OVERFLOW'>('overflowedTwice', (s) => s.counters.overflowsInARow >= 2);
const failOverflow = action<'CONTEXT_OVERFLOW'>('failContextOverflow', (s, e, now) => fail(s, e, now, `context still too long after ${s.counters.overflowsInARow} compactions: ${e.error}`));
const compactAfterOverflow = action<'CONTEXT_OVERFLOW'>('compact', (s, e, now) =>
  enter({ ...s, lastError: e.error, counters: { ...s.counters, overflowsInARow: s.counters.overflowsInARow + 1 } }, { type: S.COMPACTING, returnTo: s.phase.type as ModelStep }, e, now),
);

/** This worker cannot read the chain back: send everything, and start a new chain. */
const resendAll = action<'CHAIN_UNAVAILABLE'>('resendEveryMessage', (s) => {
  const next: RunSnapshot = { ...s, chain: null, partialText: '' };
  return ok(next, commandsFor(next));
});

const pauseRequested = guard<'QUOTA_WAIT'>('pauseRequested', (s) => s.pauseRequested);
const pauseBeforeCall = action<'QUOTA_WAIT'>('pauseBeforeCall', (s, e, now) => ok(pausedBeforeCall(s, e, now)));
const waitForQuota = action<'QUOTA_WAIT'>('waitForQuota', (s, e, now) => {
  const quotaWait = { queuedAt: e.queuedAt, since: s.quotaWait?.since ?? now, expectedAt: addMs(now, e.waitMs), position: e.position };
  const next: RunSnapshot = { ...s, quotaWait };
  return ok(next, commandsFor(next));
});

/** A call that only waits for the provider budget is given up at once (it has at most just started). */
const waitsForQuota = guard<'PAUSE'>('waitsForQuota', (s) => s.quotaWait !== null);
const pauseNow = action<'PAUSE'>('pauseBeforeCall', (s, e, now) => ok(pausedBeforeCall(s, e, now), [{ type: 'cancelWork' }]));

/**
 * An interrupting message cancels the call; the text it streamed so far stays as an assistant message marked
 * `interrupted`, and the step starts again with the message.
 */
const restartWithMessage = action<'INTERRUPT'>('restartWithMessage', (s, e, now) => {
  const queued: RunSnapshot = { ...s, queuedMessages: [...s.queuedMessages, e.text] };
  const streamed = cutText(s, e.cut) ?? '';
  const kept = streamed.trim() ? [{ role: 'assistant' as const, content: `${streamed}${INTERRUPTED_MARK}`, interrupted: true as const }] : [];
  const result = enter({ ...queued, messages: [...s.messages, ...kept] }, plain(s.phase.type as ModelStep), e, now);
  return result.ok ? ok(result.snapshot, [{ type: 'cancelWork' }, ...result.commands]) : result;
});

function modelStepRows(step: ModelStep): Row[] {
  return [
    ...(step === S.PLANNING
      ? [row('PLAN_READY', planInSteps, S.STREAMING, recordPlanSteps), row('PLAN_READY', planMalformedFirstTime, S.PLANNING, askPlanAgain), row('PLAN_READY', null, S.STREAMING, recordPlan)]
      : []),
    ...(step === S.STREAMING ? [row('MODEL_RESPONDED', null, S.PROCESSING, recordResponse)] : []),
    row('MODEL_FAILED', null, S.FAILED, failModelCall),
    row('MODEL_UNAVAILABLE', hasFallbackModel, step, switchModel),
    row('MODEL_UNAVAILABLE', null, S.FAILED, failModelCall),
    row('UNKNOWN_TOOLS', null, S.FAILED, failUnknownTools),
    row('CONTEXT_OVERFLOW', overflowedTwice, S.FAILED, failOverflow),
    row('CONTEXT_OVERFLOW', null, S.COMPACTING, compactAfterOverflow),
    ...(step === S.STREAMING ? [row('CHAIN_UNAVAILABLE', null, SELF, resendAll)] : []),
    row('QUOTA_WAIT', pauseRequested, S.PAUSED, pauseBeforeCall),
    row('QUOTA_WAIT', null, SELF, waitForQuota),
    row('PAUSE', pauseAlreadyRequested, REJECTED, refusePause),
    row('PAUSE', waitsForQuota, S.PAUSED, pauseNow),
    row('INTERRUPT', null, step, restartWithMessage),
  ];
}

export const PLANNING_ROWS: readonly Row[] = modelStepRows(S.PLANNING);
export const STREAMING_ROWS: readonly Row[] = modelStepRows(S.STREAMING);
