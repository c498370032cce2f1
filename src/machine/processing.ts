/**
 * Rows of PROCESSING, which resolves at once (its PROCESS event is internal): what a model response leads to. A cut-off
 * answer is continued, tool calls are checked against the limits, the repetition guard and approval, then run.
 */
import { CONTINUE_PROMPT } from './responses';
import { describeRepetition, findRepetition, isToolCallLimitReached, needsApproval, toolSignature } from './guards';
import type { RunSnapshot } from './snapshot';
import { atLimit, CUT_TOOL_CALL, endTruncated, enter, fail, limitFails, LOOP_WARNING, MAX_CONTINUATIONS, outputLimit, plain, S, withPolicy } from './core';
import { action, guard, row, type Row } from './table';

const isCut = (s: RunSnapshot) => s.lastFinishReason === 'length';
const calls = (s: RunSnapshot) => s.toolRound.pending;
const signatures = (s: RunSnapshot) => [...s.toolSignatures, ...calls(s).map(toolSignature)];
const repetition = (s: RunSnapshot) => findRepetition(signatures(s), s.limits.maxRepeats);
/** The calls a person must decide on first: the run's approval tools, and those the tool policy holds (not those it denies). */
const held = (s: RunSnapshot) => calls(s).filter((c) => c.policy?.action !== 'deny' && (needsApproval(s, c.name) || c.policy?.action === 'approve'));

/** The output limit cut the response off: tool calls go back to the model as errors (their arguments may be cut mid-way). */
const cutOffWithToolCalls = guard<'PROCESS'>('cutOffWithToolCalls', (s) => isCut(s) && calls(s).length > 0);
const answerCutCalls = action<'PROCESS'>('answerCutCalls', (s, e, now) => {
  const cut = calls(s).map((c) => ({ role: 'tool' as const, toolCallId: c.id, content: CUT_TOOL_CALL }));
  return enter({ ...s, toolRound: { ...s.toolRound, pending: [] }, counters: { ...s.counters, continuations: 0 }, messages: [...s.messages, ...cut] }, plain(S.STREAMING), e, now);
});
const cutOffTooOften = guard<'PROCESS'>('cutOffPastContinuations', (s) => isCut(s) && s.counters.continuations >= MAX_CONTINUATIONS);
const endCut = action<'PROCESS'>('endTruncated', (s, e, now) => endTruncated(s, e, now, `still was after ${MAX_CONTINUATIONS} continuations`));
const cutOff = guard<'PROCESS'>('cutOff', isCut);
const askToContinue = action<'PROCESS'>('askToContinue', (s, e, now) => {
  const next: RunSnapshot = { ...s, reason: { kind: 'continuation', text: `continuing an answer cut off by ${outputLimit(s)}` }, counters: { ...s.counters, continuations: s.counters.continuations + 1 }, messages: [...s.messages, { role: 'user', content: CONTINUE_PROMPT }] };
  return enter(next, plain(S.STREAMING), e, now);
});

const noToolCalls = guard<'PROCESS'>('noToolCalls', (s) => calls(s).length === 0);
const judge = action<'PROCESS'>('judgeAnswer', (s, e, now) => enter(s, plain(S.CRITIQUE), e, now));

const toolCallLimit = (s: RunSnapshot) => `tool call limit reached: ${s.counters.toolCalls} done, ${calls(s).length} more requested, limits.maxToolCalls is ${s.limits.maxToolCalls}`;
const overToolLimitAndFails = guard<'PROCESS'>('toolCallLimitReachedAndFails', (s) => isToolCallLimitReached(s, calls(s).length) && limitFails(s));
const overToolLimit = guard<'PROCESS'>('toolCallLimitReached', (s) => isToolCallLimitReached(s, calls(s).length));
const stopAtToolLimit = action<'PROCESS'>('stopAtLimit', (s, e, now) => atLimit(s, e, now, toolCallLimit(s)));

const repeatsAfterWarning = guard<'PROCESS'>('repeatsAfterWarning', (s) => s.loopWarned && repetition(s) !== null);
const failLoop = action<'PROCESS'>('failLoop', (s, e, now) => fail(s, e, now, `loop detected: ${describeRepetition(repetition(s)!)}`));
const repeats = guard<'PROCESS'>('repeats', (s) => repetition(s) !== null);
/** The calls are not run: the model is told, once, that they repeat its earlier calls without progress. */
const warnOfLoop = action<'PROCESS'>('warnOfLoop', (s, e, now) => {
  const warned = calls(s).map((c) => ({ role: 'tool' as const, toolCallId: c.id, content: LOOP_WARNING }));
  const next: RunSnapshot = {
    ...s,
    loopWarned: true,
    toolSignatures: signatures(s),
    reason: { kind: 'loopWarning', text: `warned the model: ${describeRepetition(repetition(s)!)}` },
    toolRound: { ...s.toolRound, pending: [] },
    messages: [...s.messages, ...warned],
  };
  return enter(next, plain(S.STREAMING), e, now);
});

const needsDecision = guard<'PROCESS'>('needsApproval', (s) => held(s).length > 0);
const askApproval = action<'PROCESS'>('askApproval', (s, e, now) => {
  const pending = held(s).map((c) => ({ toolCallId: c.id, kind: 'tool' as const, name: c.name, arguments: c.arguments, ...(c.parameters ? { parameters: c.parameters } : {}) }));
  return enter(withPolicy({ ...s, toolSignatures: signatures(s) }, now), { type: S.AWAITING_APPROVAL, pending, then: plain(S.TOOL_EXECUTING) }, e, now);
});
const runTools = action<'PROCESS'>('runTools', (s, e, now) => enter(withPolicy({ ...s, toolSignatures: signatures(s) }, now), plain(S.TOOL_EXECUTING), e, now));

export const PROCESSING_ROWS: readonly Row[] = [
  row('PROCESS', cutOffWithToolCalls, S.STREAMING, answerCutCalls),
  row('PROCESS', cutOffTooOften, S.COMPLETED, endCut),
  row('PROCESS', cutOff, S.STREAMING, askToContinue),
  row('PROCESS', noToolCalls, S.CRITIQUE, judge),
  row('PROCESS', overToolLimitAndFails, S.FAILED, stopAtToolLimit),
  row('PROCESS', overToolLimit, S.COMPLETED, stopAtToolLimit),
  row('PROCESS', repeatsAfterWarning, S.FAILED, failLoop),
  row('PROCESS', repeats, S.STREAMING, warnOfLoop),
  row('PROCESS', needsDecision, S.AWAITING_APPROVAL, askApproval),
  row('PROCESS', null, S.TOOL_EXECUTING, runTools),
];
