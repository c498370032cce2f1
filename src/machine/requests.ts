/** Activity inputs built from the snapshot: pure, so the workflow stays a thin interpreter. */
import type { ChatMessage, CompactionRequest, CritiqueRequest, ModelRequest, ToolCall } from '../common/chat';
import { planRetryInstruction, stepsPlanInstruction } from './plan';
import type { RunSnapshot } from './snapshot';
import { AgentState } from '../common/states';
import { customCritic } from '../common/input';

/** The plan request's last message: it names the turn's task, so a continued conversation is planned for the right one. */
export const planInstruction = (task: string) =>
  `Before acting, write a short numbered plan (at most 6 steps) for this task:\n${task}\nDo not call tools now; reply with the plan only.`;

export function modelRequest(s: RunSnapshot, purpose: 'plan' | 'respond', callNumber: number): ModelRequest {
  const extra = { ...providerLimits(s), ...quotaPlace(s) };
  if (purpose === 'plan') {
    const ask: ChatMessage[] = s.options.planSteps ? [{ role: 'user', content: stepsPlanInstruction(s.task) }] : [{ role: 'user', content: planInstruction(s.task) }];
    // The re-ask of a plan that failed its schema: the answer, and what was wrong with it.
    const retry: ChatMessage[] = s.planRetry ? [{ role: 'assistant', content: s.planRetry.answer }, { role: 'user', content: planRetryInstruction(s.planRetry.error) }] : [];
    return {
      purpose,
      callNumber,
      model: s.options.model,
      messages: [...s.messages, ...ask, ...retry],
      tools: [],
      ...extra,
    };
  }
  return { purpose, callNumber, model: s.options.model, messages: s.messages, tools: s.options.tools, ...extra };
}

/** The call's place in the fleet's provider budget: where it waits already, the run's priority and its tenant. */
function quotaPlace(s: RunSnapshot): Pick<ModelRequest, 'quota'> {
  const { priority, tenant } = s.options;
  if (!s.quotaWait && priority === undefined && tenant === undefined) return {};
  return { quota: { ...(s.quotaWait ? { queuedAt: s.quotaWait.queuedAt } : {}), ...(priority !== undefined ? { priority } : {}), ...(tenant !== undefined ? { tenant } : {}) } };
}

/** The output limit, and the tool names the worker must have (it refuses the call before any request when one is missing). */
function providerLimits(s: RunSnapshot): Pick<ModelRequest, 'maxOutputTokens' | 'checkTools'> {
  const named = [...(s.options.tools ?? []), ...s.options.approvalTools.filter((t) => t !== '*')];
  return {
    ...(s.options.maxOutputTokens !== undefined ? { maxOutputTokens: s.options.maxOutputTokens } : {}),
    ...(named.length > 0 ? { checkTools: [...new Set(named)] } : {}),
    ...(s.options.approvalTools.length > 0 ? { approvalTools: s.options.approvalTools } : {}),
  };
}

/** Where the turn's task is in the conversation: its latest user message with the task's text; -1 when none (compacted away). */
export function taskIndex(s: RunSnapshot): number {
  for (let i = s.messages.length - 1; i >= 0; i--) if (s.messages[i].role === 'user' && s.messages[i].content === s.task) return i;
  return -1;
}

export function compactionRequest(s: RunSnapshot, keepRecent: number): CompactionRequest {
  const at = taskIndex(s);
  return { model: s.options.model, messages: s.messages, keepRecent, ...(at !== -1 ? { taskIndex: at } : {}) };
}

/** The conversation before the turn's task, the context it came in: its last 4,000 characters, none for a first turn. */
function taskContext(s: RunSnapshot): string | undefined {
  const before = s.messages.slice(0, Math.max(0, taskIndex(s))).filter((m) => m.role === 'user' || (m.role === 'assistant' && m.content));
  if (before.length === 0) return undefined;
  const text = before.map((m) => `${m.role}: ${m.content}`).join('\n');
  return text.length > 4_000 ? `…${text.slice(-3_999)}` : text;
}

export function critiqueRequest(s: RunSnapshot): CritiqueRequest {
  const last = [...s.messages].reverse().find((m) => m.role === 'assistant');
  const context = taskContext(s);
  const critic = customCritic(s.options.critique);
  const base = { model: s.options.model, task: s.task, ...(context ? { context } : {}), answer: (last?.content as string | null) ?? '', callNumber: s.counters.loops + 1, ...(critic ? { critic } : {}) };
  if (s.toolRound.lastResults.length === 0) return base;
  // A tool step: the critic reads each call with its arguments and (clipped) result.
  const calls = new Map((last?.role === 'assistant' ? (last.toolCalls ?? []) : []).map((c) => [c.id, c.arguments]));
  const toolResults = s.toolRound.lastResults.map((r) => ({ name: r.name, arguments: clip(calls.get(r.toolCallId) ?? '', 2_000), ok: r.ok, content: clip(r.content, 4_000) }));
  return { ...base, toolResults };
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** One line for the UI's activity list. */
export const modelCallSummary = (purpose: string, callNumber: number) => `model call #${callNumber} (${purpose})`;
export const toolCallSummary = (call: ToolCall) => clip(`tool ${call.name} ${call.arguments}`, 120);

/** A few readable lines for the UI's current details. */
export function currentDetails(s: RunSnapshot): string {
  // A run refused for bad input applied no limits: its snapshot's are placeholders.
  const refused = s.logs.transitions.some((t) => t.event === 'INVALID_INPUT');
  const ofLimit = (count: number, limit: number) => (refused ? `${count}` : `${count}/${limit}`);
  const lines = [
    `**${s.phase.type}** since ${s.stateSince}`,
    `step ${s.counters.step}, model calls ${s.usage.modelCalls}, loops ${ofLimit(s.counters.loops, s.limits.maxLoops)}, tool calls ${ofLimit(s.counters.toolCalls, s.limits.maxToolCalls)}, ` +
      `tokens ${s.usage.totalTokens}${refused ? ' (input refused: no limits applied)' : ''}`,
  ];
  if (s.phase.type === AgentState.AWAITING_APPROVAL) lines.push(`awaiting approval: ${s.phase.pending.map((p) => `${p.name} (${p.toolCallId})`).join(', ')}`);
  if (s.reason?.text) lines.push(`reason: ${clip(s.reason.text, 300)}`);
  if (s.answer) lines.push(`answer: ${clip(s.answer, 300)}`);
  return lines.join('\n');
}
