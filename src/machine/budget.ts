/** Budget arithmetic: pure, so the machine can reserve before each model call and account after it. */
import type { ChatMessage, ModelResponse } from '../common/chat';
import { costOf, priceFor } from '../common/prices';
import type { RunSnapshot } from './snapshot';

/** Characters of a conversation as a model reads them: contents, and the names and arguments of tool calls. */
export function promptChars(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += (m.content ?? '').length;
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) chars += c.name.length + c.arguments.length;
  }
  return chars;
}

/** A rough token count (4 characters a token), enough to reserve against a budget before a call. */
export const estimateTokens = (messages: readonly ChatMessage[]): number => Math.ceil(promptChars(messages) / 4);

/**
 * Tokens of the next request: its characters at the rate the provider counted for the last one (which includes the
 * tool definitions and the chat template), else 4 characters a token. The rate is kept within 1.5 to 6 characters a
 * token, so one odd response cannot make the estimate absurd.
 */
export function estimatePromptTokens(s: RunSnapshot): number {
  const chars = promptChars(s.messages);
  const c = s.promptCalibration;
  const charsPerToken = c ? Math.min(6, Math.max(1.5, c.chars / c.tokens)) : 4;
  return Math.ceil(chars / charsPerToken);
}

/** The window the run declared, else the one the worker reported for its model; null when neither is known. */
export const contextWindowOf = (s: RunSnapshot): number | null => s.options.contextWindowTokens ?? s.contextWindow;

/**
 * Why the next request should be compacted first: its estimate fills more than `compaction.threshold` of the context
 * window. Null when it fits, when no window is known, or when there is nothing after the task to summarise.
 */
export function contextWouldOverflow(s: RunSnapshot): string | null {
  const window = contextWindowOf(s);
  if (window === null) return null;
  const taskIndex = s.messages.findIndex((m) => m.role === 'user');
  if (taskIndex < 0 || taskIndex === s.messages.length - 1) return null;
  const estimate = estimatePromptTokens(s);
  const limit = Math.floor(window * s.options.compaction.threshold);
  if (estimate <= limit) return null;
  return `compacting first: the next request is about ${estimate} tokens, over ${limit} (compaction.threshold ${s.options.compaction.threshold} of a ${window}-token context window)`;
}

const pricedModel = (s: RunSnapshot) => s.options.model ?? s.lastModel ?? undefined;
const usd = (n: number) => `$${n.toFixed(6)}`;

/** Why the next model call would exceed the run's budget, or null when it fits. */
export function budgetExceeded(s: RunSnapshot): string | null {
  const b = s.options.budget;
  if (!b) return null;
  const factor = 1 + s.counters.budgetGrants;
  const extended = s.counters.budgetGrants ? `, extended ${s.counters.budgetGrants} time(s)` : '';
  const prompt = estimateTokens(s.messages);
  const reserve = prompt + b.reserveOutputTokens;
  if (b.maxTokens !== undefined && s.usage.totalTokens + reserve > b.maxTokens * factor) {
    return `token budget exceeded: ${s.usage.totalTokens} used + ${reserve} reserved for the next call > ${b.maxTokens * factor} (budget.maxTokens${extended})`;
  }
  if (b.maxCostUsd !== undefined) {
    const model = pricedModel(s);
    if (!model) return null; // the first call names the model; it is accounted after
    const price = priceFor(model, b.prices);
    if (!price) return `no price for model ${model}: add it to budget.prices`;
    const reserved = costOf(price, prompt, b.reserveOutputTokens);
    if (s.usage.costUsd + reserved > b.maxCostUsd * factor) {
      return `cost budget exceeded: ${usd(s.usage.costUsd)} used + ${usd(reserved)} reserved for the next call > ${usd(b.maxCostUsd * factor)} (budget.maxCostUsd${extended})`;
    }
  }
  return null;
}

/**
 * The budget a child run gets: the run's own, its limits cut to what remains of them (grants included). A limit
 * already spent leaves the smallest one, so the child stops at its first call (or waits for approval, as the run would).
 */
export function childBudget(s: RunSnapshot): Record<string, unknown> | undefined {
  const b = s.options.budget;
  if (!b) return undefined;
  const factor = 1 + s.counters.budgetGrants;
  return {
    ...b,
    ...(b.maxTokens !== undefined ? { maxTokens: Math.max(1, b.maxTokens * factor - s.usage.totalTokens) } : {}),
    ...(b.maxCostUsd !== undefined ? { maxCostUsd: Math.max(1e-9, b.maxCostUsd * factor - s.usage.costUsd) } : {}),
  };
}

/** What a response cost, when its model has a price. */
export function responseCost(s: RunSnapshot, r: ModelResponse): number {
  const price = priceFor(s.options.model ?? r.model, s.options.budget?.prices);
  return price ? costOf(price, r.usage.promptTokens, r.usage.completionTokens) : 0;
}
