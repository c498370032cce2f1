/** Rows of TOOL_EXECUTING and AWAITING_APPROVAL: a tool step's results, and a person's decisions on its calls. */
import type { ToolResult } from '../common/chat';
import { SERVICE_ACTOR } from '../common/actor';
import { childrenEnded } from './children';
import { withDeciders } from './controls';
import type { PendingApproval, RunSnapshot } from './snapshot';
import { approvalNote, editProblem, enter, fail, failed, INTERRUPTED_APPROVAL, ok, plain, reject, REJECTED_CALL, S, toolsEnded, withRejected } from './core';
import {
  failApprovalTimeout,
  noWaitClock,
  queueMessage,
  raiseReminder,
  refuseTimeout,
  rejectsOnTimeout,
  rejectUndecidedCalls,
  reminderDue,
  totalTimeOut,
  totalTimeRanOut,
  workingTimeOut,
  workingTimeRanOut,
} from './running';
import { action, type Action, type EventOf, guard, REJECTED, row, SELF, type Row } from './table';
import type { AgentEvent } from './types';

/** Every call's result, in the order of the calls (a call with none gets an error), joins the conversation. */
const recordResults = action<'TOOLS_DONE'>('recordResults', (s, e, now) => {
  const byId = new Map([...s.toolRound.presetResults, ...e.results].map((r) => [r.toolCallId, r]));
  const results = s.toolRound.pending.map((call): ToolResult => byId.get(call.id) ?? { toolCallId: call.id, name: call.name, ok: false, content: 'Error: the tool returned no result.' });
  const anyFailed = results.some(failed);
  const next: RunSnapshot = {
    ...s,
    logs: { ...s.logs, toolCalls: toolsEnded(s.logs.toolCalls, e.results, s.counters.step + 1, now) },
    counters: { ...s.counters, toolCalls: s.counters.toolCalls + e.results.length, failuresInARow: anyFailed ? s.counters.failuresInARow + 1 : 0 },
    toolRound: { pending: [], presetResults: [], lastResults: results },
    messages: [...s.messages, ...results.map((r) => ({ role: 'tool' as const, toolCallId: r.toolCallId, content: r.content })), ...(s.approvalNote ? [{ role: 'user' as const, content: s.approvalNote }] : [])],
    approvalNote: null,
  };
  return enter(childrenEnded(next, e.results), plain(S.CRITIQUE), e, now);
});

/** Tools that may be stopped are (`interruptTools`), the others awaited; the message goes with the next model call. */
const stopTools = action<'INTERRUPT'>('stopTools', (s, e) => ok({ ...s, queuedMessages: [...s.queuedMessages, e.text] }, [{ type: 'interruptTools' }]));

export const TOOL_EXECUTING_ROWS: readonly Row[] = [
  row('TOOLS_DONE', null, S.CRITIQUE, recordResults),
  row('INTERRUPT', null, SELF, stopTools),
];

type Approval = EventOf<'APPROVAL'>;
const waitsFor = (s: RunSnapshot): PendingApproval[] => (s.phase.type === S.AWAITING_APPROVAL ? s.phase.pending : []);
const pendingOf = (s: RunSnapshot, e: Approval) => waitsFor(s).find((p) => p.toolCallId === e.toolCallId);
const thenOf = (s: RunSnapshot) => (s.phase.type === S.AWAITING_APPROVAL ? s.phase.then : plain(S.TOOL_EXECUTING));
/** The move DECIDED makes is recorded under the event that decided the last call. */
const decidedBy = (e: EventOf<'DECIDED'>): AgentEvent => (e.after ? ({ type: e.after } as AgentEvent) : e);
/** The wait's calls with this decision recorded. */
function decidedWith(s: RunSnapshot, e: Approval, now: string): PendingApproval[] {
  const edited = e.arguments !== undefined ? { arguments: JSON.stringify(e.arguments) } : {};
  const decision = { approved: e.approved, ...(e.feedback !== undefined ? { feedback: e.feedback } : {}), ...edited, by: e.by ?? SERVICE_ACTOR, at: now };
  return waitsFor(s).map((p) => (p.toolCallId === e.toolCallId ? { ...p, decision } : p));
}

const unknownCall = guard<'APPROVAL'>('notWaitingForIt', (s, e) => !pendingOf(s, e));
const refuseUnknown = action<'APPROVAL'>('refuse', (s, e) => {
  const waiting = waitsFor(s).filter((p) => !p.decision).map((p) => p.toolCallId);
  return reject(`toolCallId ${e.toolCallId} is not waiting for approval (waiting: ${waiting.join(', ') || 'none'})`);
});
const alreadyDecided = guard<'APPROVAL'>('alreadyDecided', (s, e) => pendingOf(s, e)?.decision !== undefined);
const refuseDecided = action<'APPROVAL'>('refuse', (s, e) => reject(`toolCallId ${e.toolCallId} was already ${pendingOf(s, e)?.decision?.approved ? 'approved' : 'rejected'}`));
const editProblemOf = (s: RunSnapshot, e: Approval) => (e.arguments !== undefined ? editProblem(pendingOf(s, e)!, e.approved, e.arguments) : null);
const invalidEdit = guard<'APPROVAL'>('invalidEdit', (s, e) => editProblemOf(s, e) !== null);
const refuseEdit = action<'APPROVAL'>('refuse', (s, e) => reject(editProblemOf(s, e)!));

const recordDecision = action<'APPROVAL'>('recordDecision', (s, e, now) => (s.phase.type === S.AWAITING_APPROVAL ? ok({ ...s, phase: { ...s.phase, pending: decidedWith(s, e, now) } }) : reject('nothing waits for approval')));

/** Every call is decided (the internal DECIDED): a budget's extension, or the tool step with the decisions applied. */
const budgetOf = (s: RunSnapshot) => waitsFor(s).find((p) => p.kind === 'budget');
const budgetDeclined = guard<'DECIDED'>('budgetDeclined', (s) => budgetOf(s)?.decision?.approved === false);
const failDeclined = action<'DECIDED'>('failBudgetDeclined', (s, e, now) => {
  const feedback = budgetOf(s)?.decision?.feedback;
  return fail(s, decidedBy(e), now, `${s.reason?.text ?? null}; extending the budget was declined${feedback ? `: ${feedback}` : ''}`);
});
const budgetApprovedBefore = (step: typeof S.PLANNING | typeof S.STREAMING) =>
  guard<'DECIDED'>(step === S.PLANNING ? 'budgetApprovedBeforePlanning' : 'budgetApprovedBeforeStreaming', (s) => budgetOf(s)?.decision?.approved === true && thenOf(s).type === step);
/** The budget grows by its original size; the model step it waited on goes on. */
const extendBudget = action<'DECIDED'>('extendBudget', (s, e, now) => {
  const feedback = budgetOf(s)?.decision?.feedback?.trim();
  const told = feedback ? [{ role: 'user' as const, content: `The user approved going over the budget. Their feedback: ${feedback}` }] : [];
  return enter({ ...s, counters: { ...s.counters, budgetGrants: s.counters.budgetGrants + 1 }, messages: [...s.messages, ...told] }, thenOf(s), decidedBy(e), now);
});
/** Rejected calls get their answer now, approved ones run (with edited arguments, marked so). */
const runDecided = action<'DECIDED'>('runDecided', (s, e, now) => {
  const decided = waitsFor(s);
  const rejected = decided.filter((p) => !p.decision?.approved);
  const editedArgs = new Map(decided.filter((p) => p.decision?.arguments !== undefined).map((p) => [p.toolCallId, p.decision!.arguments!]));
  const pending = s.toolRound.pending.map((c) => (editedArgs.has(c.id) ? { ...c, arguments: editedArgs.get(c.id)!, edited: true as const } : c));
  const answered = rejected.map((p) => ({ toolCallId: p.toolCallId, name: p.name, ok: false, content: REJECTED_CALL }));
  const next = withRejected(withDeciders({ ...s, toolRound: { ...s.toolRound, pending }, approvalNote: approvalNote(decided) }, decided), answered, now);
  return enter(next, thenOf(s), decidedBy(e), now);
});

/** A wait for the budget keeps waiting, with the message queued. */
const waitsForBudget = guard<'INTERRUPT'>('waitsForBudget', (s) => waitsFor(s).some((p) => p.kind === 'budget'));
/** Each undecided call is rejected as a person would reject it; DECIDED then moves the run on. */
const rejectForMessage = action<'INTERRUPT'>('rejectUndecided', (s, e) => {
  if (s.phase.type !== S.AWAITING_APPROVAL) return reject('nothing waits for approval');
  const pending = s.phase.pending.map((p) => (p.decision ? p : { ...p, decision: { approved: false, feedback: INTERRUPTED_APPROVAL } }));
  return ok({ ...s, queuedMessages: [...s.queuedMessages, e.text], phase: { ...s.phase, pending } });
});

export const AWAITING_APPROVAL_ROWS: readonly Row[] = [
  row('APPROVAL', unknownCall, REJECTED, refuseUnknown),
  row('APPROVAL', alreadyDecided, REJECTED, refuseDecided),
  row('APPROVAL', invalidEdit, REJECTED, refuseEdit),
  row('APPROVAL', null, SELF, recordDecision),
  row('DECIDED', budgetDeclined, S.FAILED, failDeclined),
  row('DECIDED', budgetApprovedBefore(S.PLANNING), S.PLANNING, extendBudget),
  row('DECIDED', budgetApprovedBefore(S.STREAMING), S.STREAMING, extendBudget),
  row('DECIDED', null, S.TOOL_EXECUTING, runDecided),
  row('INTERRUPT', waitsForBudget, SELF, queueMessage as unknown as Action<'INTERRUPT'>),
  row('INTERRUPT', null, SELF, rejectForMessage),
  row('TIMEOUT', totalTimeRanOut, S.FAILED, totalTimeOut),
  row('TIMEOUT', workingTimeRanOut, S.FAILED, workingTimeOut),
  row('TIMEOUT', noWaitClock, REJECTED, refuseTimeout),
  // The reminder keeps the state; `approval.onTimeout: 'reject'` goes on as a decision would.
  row('TIMEOUT', reminderDue, SELF, raiseReminder),
  row('TIMEOUT', rejectsOnTimeout, S.TOOL_EXECUTING, rejectUndecidedCalls),
  row('TIMEOUT', null, S.FAILED, failApprovalTimeout),
];
