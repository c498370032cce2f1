/** The run's record of who sent each control it took (`logs.controls`) and who decided each call a person decided. */
import { SERVICE_ACTOR } from '../common/actor';
import type { ControlRecord, ToolCallRecord } from '../common/view';
import type { PendingApproval, RunSnapshot } from './snapshot';
import type { AgentEvent } from './types';

/** Controls the run keeps: the last CONTROL_LOG_SIZE. */
export const CONTROL_LOG_SIZE = 50;

type Control = Extract<AgentEvent, { type: ControlRecord['event'] }>;
const CONTROLS: ReadonlySet<AgentEvent['type']> = new Set(['APPROVAL', 'MESSAGE', 'INTERRUPT', 'PAUSE', 'RESUME', 'ABORT']);
const isControl = (e: AgentEvent): e is Control => CONTROLS.has(e.type);

/** `next` (the run once it took `e`) with the control logged, who sent it (the service when it named no one) and when. */
export function withControl(next: RunSnapshot, e: AgentEvent, now: string): RunSnapshot {
  if (!isControl(e)) return next;
  const decision = e.type === 'APPROVAL' ? { toolCallId: e.toolCallId, approved: e.approved, ...(e.arguments !== undefined ? { edited: true as const } : {}) } : {};
  const entry: ControlRecord = { event: e.type, by: e.by ?? SERVICE_ACTOR, at: now, step: next.counters.step, ...decision };
  return { ...next, logs: { ...next.logs, controls: [...(next.logs.controls ?? []), entry].slice(-CONTROL_LOG_SIZE) } };
}

/** Who decided each of a wait's calls a person decided, kept on the tool round until its calls are logged. */
export function withDeciders(s: RunSnapshot, decided: readonly PendingApproval[]): RunSnapshot {
  const deciders = decided.flatMap((p) => (p.kind === 'tool' && p.decision?.by && p.decision.at ? [{ toolCallId: p.toolCallId, by: p.decision.by, at: p.decision.at }] : []));
  return deciders.length === 0 ? s : { ...s, toolRound: { ...s.toolRound, deciders } };
}

/** The tool log's `decidedBy` and `decidedAt` of a call, when a person decided it. */
export function decidedFields(s: RunSnapshot, toolCallId: string): Pick<ToolCallRecord, 'decidedBy' | 'decidedAt'> {
  const d = s.toolRound.deciders?.find((x) => x.toolCallId === toolCallId);
  return d ? { decidedBy: d.by, decidedAt: d.at } : {};
}
