/** The model critic: asks the model to judge a final answer against the task, as strict JSON. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import { z } from 'zod';
import type { CritiqueRequest } from '../common/chat';
import type { CritiqueDecision } from '../workflows/states';
import { classifyModelError } from './errors';

const DecisionSchema = z.object({
  action: z.enum(['continue', 'retry', 'replan', 'complete']),
  reason: z.string().min(1),
  confidence: z.number().min(0).max(1),
});

const CRITIC_PROMPT =
  'You review an assistant\'s final answer to a task. Reply with JSON only: ' +
  '{"action": "complete" | "retry" | "replan", "reason": string, "confidence": number between 0 and 1}. ' +
  'Use "complete" when the answer does the task, "retry" when it is close but wrong or incomplete, "replan" when the approach is wrong.';

export function createCritiqueAnswer(deps: { openai: OpenAI; defaultModel: string }) {
  return async function critiqueAnswer(request: CritiqueRequest): Promise<CritiqueDecision> {
    const ctx = Context.current();
    let content: string;
    try {
      const response = await deps.openai.chat.completions.create(
        {
          model: request.model ?? deps.defaultModel,
          messages: [
            { role: 'system', content: CRITIC_PROMPT },
            { role: 'user', content: `Task:\n${request.task}\n\nAnswer:\n${request.answer}` },
          ],
        },
        { signal: ctx.cancellationSignal },
      );
      content = response.choices[0]?.message?.content ?? '';
    } catch (err) {
      throw classifyModelError(err, [deps.openai.apiKey]);
    }
    const json = content.slice(content.indexOf('{'), content.lastIndexOf('}') + 1);
    const parsed = DecisionSchema.safeParse(safeJson(json));
    if (!parsed.success) {
      throw ApplicationFailure.create({ type: 'CritiqueUnparsable', message: `the critic did not answer with a decision: ${content.slice(0, 200)}`, nonRetryable: true });
    }
    return parsed.data;
  };
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
