/** Rows of COMPACTING, PAUSED and COMPLETED (whose open conversation waits for a follow-up message). */
import type { AgentState } from '../common/states';
import { addMs } from './clocks';
import type { RunSnapshot } from './snapshot';
import { enter, fail, ok, plain, reject, S } from './core';
import { withSideUsage } from './responses';
import { abortPausedTooLong, noTransition, pausedTooLong, refuseTimeout, totalTimeOut, totalTimeRanOut, workingTimeOut, workingTimeRanOut } from './running';
import { action, guard, REJECTED, row, SELF, type Row } from './table';

/** The summary replaces the conversation, which no stored chain begins any more; the model step it came from goes on. */
const useSummary = action<'COMPACTED'>('useSummary', (s, e, now) => {
  // A proactive compaction leaves the calibration as it was: the ratio of tokens to characters still holds.
  const next: RunSnapshot = { ...s, messages: e.result.messages, usage: withSideUsage(s, e.result.usage, e.result.replayed ? 'replayedCompactions' : undefined).usage, chain: null };
  return enter(next, plain(s.phase.type === S.COMPACTING ? s.phase.returnTo : S.STREAMING), e, now);
});
const failCompaction = action<'COMPACTION_FAILED'>('failCompaction', (s, e, now) => fail(s, e, now, `compaction failed: ${e.error}`));

const returnsToPlanning = guard<'COMPACTED'>('returnsToPlanning', (s) => s.phase.type === S.COMPACTING && s.phase.returnTo === S.PLANNING);

export const COMPACTING_ROWS: readonly Row[] = [
  row('COMPACTED', returnsToPlanning, S.PLANNING, useSummary),
  row('COMPACTED', null, S.STREAMING, useSummary),
  row('COMPACTION_FAILED', null, S.FAILED, failCompaction),
];

const resume = action<'RESUME'>('resume', (s, e, now) => (s.phase.type === S.PAUSED ? enter(s, s.phase.resumeTo, e, now) : reject(`the run is ${s.phase.type}, not paused`)));
/** The work the pause stood in front of, which RESUME enters. */
const resumesTo = (to: AgentState) => guard<'RESUME'>(`resumesTo${to.toLowerCase().replace(/(?:^|_)(\w)/g, (_m, c: string) => c.toUpperCase())}`, (s) => s.phase.type === S.PAUSED && s.phase.resumeTo.type === to);

export const PAUSED_ROWS: readonly Row[] = [
  row('TIMEOUT', totalTimeRanOut, S.FAILED, totalTimeOut),
  row('TIMEOUT', workingTimeRanOut, S.FAILED, workingTimeOut),
  // Paused longer than limits.maxPausedMs; otherwise no clock runs while a person decides.
  row('TIMEOUT', pausedTooLong, S.ABORTED, abortPausedTooLong),
  row('TIMEOUT', null, REJECTED, refuseTimeout),
  row('RESUME', resumesTo(S.PLANNING), S.PLANNING, resume),
  row('RESUME', resumesTo(S.STREAMING), S.STREAMING, resume),
  row('RESUME', resumesTo(S.TOOL_EXECUTING), S.TOOL_EXECUTING, resume),
  row('RESUME', resumesTo(S.COMPACTING), S.COMPACTING, resume),
  row('PAUSE', null, REJECTED, noTransition),
];

const conversationClosed = guard<'MESSAGE' | 'INTERRUPT'>('conversationClosed', (s) => s.phase.type !== S.COMPLETED || !s.phase.conversationOpen);
const refuseClosed = action<'MESSAGE' | 'INTERRUPT'>('refuse', () => reject('the conversation is closed'));
/** A follow-up turn: the message goes with the next model call, is the turn's task, and gets a fresh working-time deadline. */
const followUp = action<'MESSAGE' | 'INTERRUPT'>('followUp', (s, e, now) => {
  // The answer so far stays until the next one replaces it.
  const queued: RunSnapshot = { ...s, task: e.text, queuedMessages: [...s.queuedMessages, e.text], clocks: { ...s.clocks, work: { state: 'running', deadline: addMs(now, s.limits.timeoutMs) } } };
  return enter(queued, plain(S.STREAMING), e, now);
});
const notOpen = guard<'CLOSE'>('conversationNotOpen', (s) => s.phase.type !== S.COMPLETED || !s.phase.conversationOpen);
const refuseClose = action<'CLOSE'>('refuse', () => reject('the conversation is not open'));
const close = action<'CLOSE'>('closeConversation', (s) => ok({ ...s, phase: { type: S.COMPLETED, conversationOpen: false } }));

// Terminal, unless the run keeps the conversation open for a follow-up message (keepOpenMs).
export const COMPLETED_ROWS: readonly Row[] = [
  row('MESSAGE', conversationClosed, REJECTED, refuseClosed),
  row('MESSAGE', null, S.STREAMING, followUp),
  row('INTERRUPT', conversationClosed, REJECTED, refuseClosed),
  row('INTERRUPT', null, S.STREAMING, followUp),
  row('CLOSE', notOpen, REJECTED, refuseClose),
  row('CLOSE', null, SELF, close),
];
