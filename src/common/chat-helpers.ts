/**
 * The chat's plain values and guards (token counts, the continue prompt, what a recorded answer or a quota wait is),
 * kept apart from the chat schemas (chat.ts, whose types they use) so that a run's code does not build those schemas
 * to add two counts: every run evaluates the workflow bundle's modules in its own instances and keeps them while it
 * is cached (BENCHMARKS.md, figures (g) and (h)).
 */
import type { ModelResponse, QuotaWait, RecordedCritique, RecordedSummary, Usage } from './chat';

/** The user turn that asks the model to go on with an answer the output limit cut off (the machine sends it, the model activity resends it). */
export const CONTINUE_PROMPT = 'Your answer was cut off by the output limit. Continue exactly where it stopped, without repeating anything.';

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });

export const addUsage = (a: Usage, b: Usage): Usage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/** Whether a recorded answer is the model critic's decision. */
export const isRecordedCritique = (a: object): a is RecordedCritique => 'critique' in a;
/** Whether a recorded answer is a compaction's summary. */
export const isRecordedSummary = (a: object): a is RecordedSummary => 'summary' in a;
/** Whether a recorded answer is a model call's response. */
export const isRecordedResponse = (a: object): a is ModelResponse => 'text' in a && 'toolCalls' in a;

export const isQuotaWait = (r: object): r is QuotaWait => 'quotaWait' in r;
