/**
 * The run's clocks: working time (`limits.timeoutMs`), which stops while a person decides, and an approval wait's own
 * (`limits.approvalTimeoutMs`). Pure; the machine moves them on every state change and the workflow keeps one timer
 * on the earliest (`timerDue`).
 */
import { AgentState, isTerminal } from '../common/states';
import type { RunSnapshot, WorkClock } from './snapshot';

const S = AgentState;
type Clocks = Pick<RunSnapshot['clocks'], 'work' | 'approvalDeadline'> & Partial<Pick<RunSnapshot['clocks'], 'approvalReminderDue' | 'approvalReminder' | 'pausedDeadline' | 'totalDeadline'>>;

export const addMs = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

/** States in which the run waits for a person: the working-time clock stops. */
const HUMAN_WAITS: readonly AgentState[] = [S.AWAITING_APPROVAL, S.PAUSED];

/**
 * The run's clocks across a state change: the working-time deadline stops while a person decides (its remainder kept)
 * and starts again after; an approval wait has its own deadline; an ended run has none.
 */
export function clocks(s: RunSnapshot, to: AgentState, now: string): Clocks {
  if (isTerminal(to)) return { work: { state: 'none' }, approvalDeadline: null, ...waitClocks(s, to, now) };
  let work: WorkClock = s.clocks.work;
  const waits = HUMAN_WAITS.includes(to);
  if (waits && work.state === 'running') work = { state: 'stopped', remainingMs: Math.max(0, Date.parse(work.deadline) - Date.parse(now)) };
  if (!waits && work.state === 'stopped') work = { state: 'running', deadline: addMs(now, work.remainingMs) };
  const approvalTimeout = s.limits.approvalTimeoutMs;
  const approvalDeadline = to !== S.AWAITING_APPROVAL || approvalTimeout === null ? null : s.phase.type === to ? s.clocks.approvalDeadline : addMs(now, approvalTimeout);
  return { work, approvalDeadline, ...waitClocks(s, to, now) };
}

/**
 * The clocks of the waits for a person that runs may opt out of (approval.reminderAt, limits.maxPausedMs), and the
 * run's total time (limits.totalTimeoutMs, set at its first state change): absent when the run has none.
 */
function waitClocks(s: RunSnapshot, to: AgentState, now: string): Partial<Clocks> {
  const { approvalTimeoutMs, maxPausedMs, totalTimeoutMs } = s.limits;
  const share = s.options.approvalReminderAt;
  const staying = s.phase.type === to;
  const out: Partial<Clocks> = {};
  if (totalTimeoutMs !== undefined && s.clocks.totalDeadline === undefined) out.totalDeadline = addMs(now, totalTimeoutMs);
  if (share !== undefined && approvalTimeoutMs !== null) {
    out.approvalReminderDue = to !== S.AWAITING_APPROVAL ? null : staying ? s.clocks.approvalReminderDue : addMs(now, Math.round(share * approvalTimeoutMs));
    out.approvalReminder = to === S.AWAITING_APPROVAL && staying ? s.clocks.approvalReminder : null;
  }
  if (maxPausedMs !== null) out.pausedDeadline = to !== S.PAUSED ? null : staying ? s.clocks.pausedDeadline : addMs(now, maxPausedMs);
  return out;
}

/**
 * The clocks of a run whose working time starts afresh now in its current state (a fork): the whole `timeoutMs`,
 * waiting already when a person decides, and an approval wait's own clock from now.
 */
export function freshClocks(s: RunSnapshot, now: string): Clocks {
  const running: Clocks = { work: { state: 'running', deadline: addMs(now, s.limits.timeoutMs) }, approvalDeadline: null };
  // A fork's total time starts with it.
  return clocks({ ...s, clocks: { ...withoutTotal(s.clocks), ...running }, phase: { type: S.IDLE } }, s.phase.type, now);
}

const withoutTotal = ({ totalDeadline: _total, ...rest }: RunSnapshot['clocks']): RunSnapshot['clocks'] => rest;

/** When the run's total time runs out, while it has not ended (a kept-open conversation has its own `keepOpenMs`). */
export const totalDeadline = (s: RunSnapshot): string | null => (isTerminal(s.phase.type) ? null : (s.clocks.totalDeadline ?? null));

/** When the wait for a person in progress ends (an approval, a pause), by its own deadline or the run's total time; null when none. */
export function waitDeadline(s: RunSnapshot): string | null {
  const own = s.phase.type === S.AWAITING_APPROVAL ? s.clocks.approvalDeadline : s.phase.type === S.PAUSED ? s.clocks.pausedDeadline : undefined;
  if (own === undefined) return null;
  return [own, totalDeadline(s)].filter((d): d is string => d !== null).sort()[0] ?? null;
}

/** When the run's timer must fire, null for none: the earliest of its clocks (working time, an approval wait, a pause, the total time). */
export const timerDue = (s: RunSnapshot): string | null =>
  [workDeadline(s), s.clocks.approvalDeadline, s.clocks.approvalReminderDue, s.clocks.pausedDeadline, totalDeadline(s)].filter((d): d is string => d != null).sort()[0] ?? null;

/** When working time runs out; null while its clock is stopped or not set. */
export const workDeadline = (s: RunSnapshot): string | null => (s.clocks.work.state === 'running' ? s.clocks.work.deadline : null);

/** The clocks across a state change. */
export const movedClocks = (s: RunSnapshot, to: AgentState, now: string): Partial<Clocks> => clocks(s, to, now);
