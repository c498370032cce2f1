import type { Price } from './input';

/**
 * Example prices in USD per million tokens, for cost budgets. Providers change prices: pass `budget.prices` for the
 * models you use. Model names match by the longest prefix, so `gpt-4o-mini-2024-07-18` uses `gpt-4o-mini`.
 */
export const DEFAULT_PRICES: Readonly<Record<string, Price>> = {
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
  'qwen-plus': { inputPerMTok: 0.4, outputPerMTok: 1.2 },
  'qwen-max': { inputPerMTok: 1.6, outputPerMTok: 6.4 },
  'scripted-': { inputPerMTok: 1, outputPerMTok: 2 },
};

export function priceFor(model: string | undefined, overrides: Record<string, Price> = {}): Price | undefined {
  if (!model) return undefined;
  const table = { ...DEFAULT_PRICES, ...overrides };
  const key = Object.keys(table)
    .filter((name) => model.startsWith(name))
    .sort((a, b) => b.length - a.length)[0];
  return key ? table[key] : undefined;
}

export const costOf = (price: Price, promptTokens: number, completionTokens: number): number =>
  atPicoDollars((promptTokens * price.inputPerMTok + completionTokens * price.outputPerMTok) / 1_000_000);

/** USD to a millionth of a millionth, so that a sum of prices reads 0.000275, not 0.00027499999999999996. */
const atPicoDollars = (usd: number): number => Math.round(usd * 1e12) / 1e12;

/** A running cost plus another, kept free of binary fractions' noise. */
export const addCost = (a: number, b: number): number => atPicoDollars(a + b);
