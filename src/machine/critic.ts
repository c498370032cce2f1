import type { RunSnapshot } from './snapshot';
import { CritiqueAction } from '../common/states';
import type { CritiqueDecision } from '../common/view';

/**
 * The default critic: free, deterministic, and enough to steer most runs.
 * A failed tool is retried (the model sees the error); failures on consecutive steps ask for a new plan;
 * a non-empty answer without tool calls completes the run; an empty one is sent back.
 */
export function ruleCritique(s: RunSnapshot): CritiqueDecision {
  const failed = s.toolRound.lastResults.filter((r) => !r.ok && !r.interrupted);
  if (s.toolRound.lastResults.length > 0) {
    if (failed.length === 0) return { action: CritiqueAction.CONTINUE, reason: `${s.toolRound.lastResults.length} tool call(s) succeeded`, confidence: 90 };
    const names = [...new Set(failed.map((r) => r.name))].join(', ');
    if (s.counters.failuresInARow >= 2) return { action: CritiqueAction.REPLAN, reason: `tool calls failed on ${s.counters.failuresInARow} steps in a row (${names})`, confidence: 70 };
    return { action: CritiqueAction.RETRY, reason: `tool call failed (${names})`, confidence: 80 };
  }
  const last = s.messages[s.messages.length - 1];
  const text = last?.role === 'assistant' ? (last.content ?? '').trim() : '';
  if (!text) return { action: CritiqueAction.RETRY, reason: 'the model returned an empty answer', confidence: 90 };
  return { action: CritiqueAction.COMPLETE, reason: 'the model answered without calling tools', confidence: 80 };
}
