import type { CompletionUsage } from 'openai/resources/completions';
import type { Usage } from '../common/chat';

/** A provider's token counts as the run keeps them; zeros when it reported none, the sum when it left out the total. */
export function usageOf(u: CompletionUsage | null | undefined): Usage {
  return {
    promptTokens: u?.prompt_tokens ?? 0,
    completionTokens: u?.completion_tokens ?? 0,
    totalTokens: u?.total_tokens ?? (u ? u.prompt_tokens + u.completion_tokens : 0),
  };
}
