/**
 * Context windows (tokens) of models a run is likely to name, by name prefix: the longest matching prefix wins.
 * Figures from the providers' model pages; a run or a worker that knows better sets `contextWindowTokens` or
 * `LLM_CONTEXT_WINDOW_TOKENS`.
 */
export const KNOWN_CONTEXT_WINDOWS: Readonly<Record<string, number>> = {
  'gpt-3.5-turbo': 16_385,
  'gpt-4': 8_192,
  'gpt-4-turbo': 128_000,
  'gpt-4o': 128_000,
  'gpt-4.1': 1_047_576,
  'gpt-5': 400_000,
  o1: 200_000,
  o3: 200_000,
  'o4-mini': 200_000,
  'qwen-turbo': 1_000_000,
  'qwen-plus': 131_072,
  'qwen-max': 32_768,
  'qwen2.5': 32_768,
  'qwen3': 32_768,
  'claude-': 200_000,
  'deepseek-chat': 65_536,
  'deepseek-reasoner': 65_536,
  'llama3.1': 131_072,
  'llama3.2': 131_072,
  'mistral-large': 131_072,
  'gemini-1.5': 1_048_576,
  'gemini-2': 1_048_576,
  smollm2: 8_192,
};

/** The context window of a model by name, or undefined for a model this table does not know. */
export function knownContextWindow(model: string | null | undefined): number | undefined {
  if (!model) return undefined;
  const name = model.toLowerCase().replace(/^.*\//, ''); // `openai/gpt-4o`, `Qwen/Qwen2.5-7B`
  let best: string | undefined;
  for (const prefix of Object.keys(KNOWN_CONTEXT_WINDOWS)) {
    if (name.startsWith(prefix) && (!best || prefix.length > best.length)) best = prefix;
  }
  return best ? KNOWN_CONTEXT_WINDOWS[best] : undefined;
}
