/** Budget arithmetic: pure, so the machine can reserve before each model call and account after it. */
import type { ChatMessage, ModelResponse } from '../common/chat';
import { costOf, priceFor } from '../common/prices';
import type { RunSnapshot } from './snapshot';

/** A rough token count (4 characters a token), enough to reserve against a budget before a call. */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += (m.content ?? '').length;
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) chars += c.name.length + c.arguments.length;
  }
  return Math.ceil(chars / 4);
}

const pricedModel = (s: RunSnapshot) => s.options.model ?? s.lastModel ?? undefined;
const usd = (n: number) => `$${n.toFixed(6)}`;

/** Why the next model call would exceed the run's budget, or null when it fits. */
export function budgetExceeded(s: RunSnapshot): string | null {
  const b = s.options.budget;
  if (!b) return null;
  const factor = 1 + s.budgetGrants;
  const extended = s.budgetGrants ? `, extended ${s.budgetGrants} time(s)` : '';
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

/** What a response cost, when its model has a price. */
export function responseCost(s: RunSnapshot, r: ModelResponse): number {
  const price = priceFor(s.options.model ?? r.model, s.options.budget?.prices);
  return price ? costOf(price, r.usage.promptTokens, r.usage.completionTokens) : 0;
}
