/** What a model response, or a call beside the model steps, changes in the snapshot: usage, calibration, continuation. Pure. */
import type { ModelResponse, Usage } from '../common/chat';
import { addUsage, CONTINUE_PROMPT } from '../common/chat-helpers';
import { CritiqueAction } from '../common/states';
import type { CritiqueDecision } from '../common/view';
import { addCost } from '../common/prices';
import { promptChars, responseCost } from './budget';
import type { RunSnapshot } from './snapshot';

export { CONTINUE_PROMPT };

/** The context window and the tokens-per-character the provider reported, for the next request's estimate. */
export function calibrated(s: RunSnapshot, r: ModelResponse): Pick<RunSnapshot, 'contextWindow' | 'promptCalibration'> {
  const chars = promptChars(s.messages);
  // A what-if fork's replayed answer spent nothing, but calibrates by what the provider counted for the original.
  const tokens = r.replayed ? (r.recordedPromptTokens ?? 0) : r.usage.promptTokens;
  return {
    contextWindow: r.contextWindowTokens ?? s.contextWindow,
    promptCalibration: tokens > 0 && chars > 0 ? { chars, tokens } : s.promptCalibration,
  };
}

/** The counts of calls beside the model steps that a what-if fork answered with the original's recorded answers. */
export type ReplayedSideCalls = 'replayedCritiques' | 'replayedCompactions';

/**
 * Tokens (and their cost) of a call beside the model steps, such as the critic's or a compaction's; `replayed`: the
 * count it adds to, when a what-if fork answered it from the record.
 */
export function withSideUsage(s: RunSnapshot, u: Usage | undefined, replayed?: ReplayedSideCalls): RunSnapshot {
  const counted = replayed ? { ...s, usage: { ...s.usage, [replayed]: (s.usage[replayed] ?? 0) + 1 } } : s;
  if (!u) return counted;
  const cost = responseCost(counted, { text: '', toolCalls: [], usage: u, finishReason: null, model: counted.lastModel ?? '' });
  return { ...counted, usage: { ...counted.usage, ...addUsage(counted.usage, u), costUsd: addCost(counted.usage.costUsd, cost) } };
}

export function withResponseUsage(s: RunSnapshot, r: ModelResponse): RunSnapshot {
  const usage = {
    ...s.usage,
    ...addUsage(s.usage, r.usage),
    modelCalls: s.usage.modelCalls + 1,
    costUsd: addCost(s.usage.costUsd, responseCost(s, r)),
    ...(r.replayed || s.usage.replayedCalls ? { replayedCalls: (s.usage.replayedCalls ?? 0) + (r.replayed ? 1 : 0) } : {}),
  };
  return { ...s, usage, lastModel: r.model || s.lastModel };
}

/** The last thing the model said: the answer a run ends with. */
export function lastAssistantText(s: RunSnapshot): string | null {
  for (let i = s.messages.length - 1; i >= 0; i--) {
    const m = s.messages[i];
    if (m.role === 'assistant' && m.content) return m.content;
  }
  return null;
}

/**
 * What a response changes about continuing a cut-off answer: the finish reason, and, when it continues one, the
 * parts joined into one assistant message in place of the earlier part and the request to go on.
 */
/** The fields a response changes about a cut-off answer; `continuations` 0: the count in `counters` starts again. */
export type ContinuedChanges = Partial<Omit<RunSnapshot, 'counters'>> & { continuations?: 0 };

export function continued(s: RunSnapshot, r: ModelResponse): ContinuedChanges {
  const cut = r.finishReason === 'length';
  const [prompt, part] = [s.messages.at(-1), s.messages.at(-2)];
  const continuing = s.counters.continuations > 0 && r.toolCalls.length === 0 && prompt?.role === 'user' && prompt.content === CONTINUE_PROMPT && part?.role === 'assistant';
  if (!continuing) return { lastFinishReason: r.finishReason, ...(cut ? {} : { continuations: 0 }) };
  const joined = `${part.content ?? ''}${r.text}`;
  return {
    lastFinishReason: r.finishReason,
    partialText: joined,
    // The conversation is rewritten, not extended: a chain stored before no longer begins it.
    chain: null,
    messages: [...s.messages.slice(0, -2), { role: 'assistant', content: joined }],
    ...(cut ? {} : { continuations: 0 }),
  };
}

/** A `complete` the critic is not confident of is another attempt. */
export function confident(d: CritiqueDecision, min: number): CritiqueDecision {
  if (d.action !== CritiqueAction.COMPLETE || d.confidence >= min) return d;
  return { ...d, action: CritiqueAction.RETRY, reason: `the critic is not confident enough (${d.confidence} < critiqueMinConfidence ${min}): ${d.reason}` };
}
