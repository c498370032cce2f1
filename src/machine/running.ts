/** The parent group of the running states: abort, the timer, pause and resume requests, messages. */
import type { RunSnapshot } from './snapshot';
import type { CutText } from './types';
import { fail, finish, ok, reject, rejectUndecided, remind, S } from './core';
import { action, guard, REJECTED, row, SELF, type Row } from './table';

export const abort = action<'ABORT'>('abort', (s, e, now) => finish({ ...s, partialText: cutText(s, e.cut) ?? s.partialText }, S.ABORTED, e, now, `aborted: ${e.reason ?? 'by request'}`));

/** The text of the call a control stopped, when it is the run's call in flight (a cut of an earlier call describes nothing). */
export function cutText(s: RunSnapshot, cut: CutText | undefined): string | undefined {
  if (!cut || (s.phase.type !== S.STREAMING && s.phase.type !== S.PLANNING)) return undefined;
  return s.stream && cut.callNumber === s.stream.callNumber ? cut.text : undefined;
}

export const pauseAlreadyRequested = guard<'PAUSE'>('pauseAlreadyRequested', (s) => s.pauseRequested);
export const refusePause = action<'PAUSE'>('refuse', () => reject('a pause is already requested'));
/** Asked to pause: the run pauses on its way into the next work. */
export const requestPause = action<'PAUSE'>('requestPause', (s) => ok({ ...s, pauseRequested: true }));

export const queueMessage = action<'MESSAGE' | 'INTERRUPT'>('queueMessage', (s, e) => ok({ ...s, queuedMessages: [...s.queuedMessages, e.text] }));


/** The run's total time (`limits.totalTimeoutMs`) ran out: it ends the run whatever it was doing or waiting for. */
export const totalTimeRanOut = guard<'TIMEOUT'>('totalTimeRanOut', (s, _e, now) => s.clocks.totalDeadline !== undefined && now >= s.clocks.totalDeadline);
export const workingTimeRanOut = guard<'TIMEOUT'>('workingTimeRanOut', (s) => s.clocks.work.state === 'running');
export const pausedTooLong = guard<'TIMEOUT'>('pausedTooLong', (s) => s.phase.type === S.PAUSED && s.clocks.pausedDeadline !== null);
export const noWaitClock = guard<'TIMEOUT'>('noWaitClockRuns', (s) => s.phase.type !== S.AWAITING_APPROVAL || s.clocks.approvalDeadline === null);
export const reminderDue = guard<'TIMEOUT'>('reminderDue', (s, _e, now) => s.clocks.approvalReminderDue !== null && s.clocks.approvalDeadline !== null && now < s.clocks.approvalDeadline);
/** `approval.onTimeout: 'reject'`, and every call still undecided is a tool call (a budget wait cannot be rejected so). */
export const rejectsOnTimeout = guard<'TIMEOUT'>(
  'rejectsOnTimeout',
  (s) => s.phase.type === S.AWAITING_APPROVAL && s.options.approvalOnTimeout === 'reject' && s.phase.pending.every((p) => p.decision || p.kind === 'tool'),
);

export const workingTimeOut = action<'TIMEOUT'>('failWorkingTimeOut', (s, e, now) => fail(s, e, now, `timed out after ${s.limits.timeoutMs} ms of working time (limits.timeoutMs)`));
export const abortPausedTooLong = action<'TIMEOUT'>('abortPausedTooLong', (s, e, now) => finish(s, S.ABORTED, e, now, `aborted: paused for ${s.limits.maxPausedMs} ms (limits.maxPausedMs)`));
export const totalTimeOut = action<'TIMEOUT'>('failTotalTimeOut', (s, e, now) => fail(s, e, now, `timed out after ${s.limits.totalTimeoutMs} ms in all, waits included (limits.totalTimeoutMs)`));
export const refuseTimeout = action<'TIMEOUT'>('refuse', () => reject('no timer is running: the run waits for a person'));

const approvalWhy = (s: RunSnapshot) => {
  const waiting = s.phase.type === S.AWAITING_APPROVAL ? s.phase.pending.filter((p) => !p.decision).map((p) => p.name) : [];
  return `no decision on ${waiting.join(', ')} within ${s.limits.approvalTimeoutMs} ms (limits.approvalTimeoutMs)`;
};
export const raiseReminder = action<'TIMEOUT'>('raiseReminder', (s, _e, now) =>
  s.phase.type === S.AWAITING_APPROVAL && s.clocks.approvalDeadline ? ok(remind(s, s.phase.pending, s.clocks.approvalDeadline, now)) : reject('no reminder is due'),
);
export const rejectUndecidedCalls = action<'TIMEOUT'>('rejectUndecided', (s, e, now) =>
  s.phase.type === S.AWAITING_APPROVAL ? rejectUndecided(s, s.phase, approvalWhy(s), e, now) : reject('nothing waits for approval'),
);
export const failApprovalTimeout = action<'TIMEOUT'>('failApprovalTimedOut', (s, e, now) => fail(s, e, now, approvalWhy(s)));

/** RESUME outside PAUSED: it withdraws a requested pause. */
const notPauseRequested = guard<'RESUME'>('notPauseRequested', (s) => !s.pauseRequested);
const refuseResume = action<'RESUME'>('refuse', (s) => reject(`the run is ${s.phase.type}, not paused`));
const withdrawPause = action<'RESUME'>('withdrawPause', (s) => ok({ ...s, pauseRequested: false }));

/** A state's own row that keeps an event from the parent group's rows: the event has no transition there. */
export const noTransition = action('refuse', (s, e) => reject(`event ${e.type} has no transition from state ${s.phase.type}`));

/**
 * The parent group: rows every running state shares, tried after the state's own rows. `self` is the state: a pause
 * is recorded for the way into the next work, a message queued for the next model call.
 */
export const RUNNING_ROWS: readonly Row[] = [
  row('ABORT', null, S.ABORTED, abort),
  // TIMEOUT in a state where no person is waited for: the working time ran out.
  row('TIMEOUT', totalTimeRanOut, S.FAILED, totalTimeOut),
  row('TIMEOUT', workingTimeRanOut, S.FAILED, workingTimeOut),
  // Before the run started, no clock runs.
  row('TIMEOUT', null, REJECTED, refuseTimeout),
  row('PAUSE', pauseAlreadyRequested, REJECTED, refusePause),
  row('PAUSE', null, SELF, requestPause),
  row('RESUME', notPauseRequested, REJECTED, refuseResume),
  row('RESUME', null, SELF, withdrawPause),
  row('MESSAGE', null, SELF, queueMessage),
  // Where no work can be stopped for it, an interrupting message is queued as any message is.
  row('INTERRUPT', null, SELF, queueMessage),
];
