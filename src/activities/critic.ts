/**
 * The model critic: asks the model to judge a final answer, or a tool step's results, against the task, as JSON. It asks with the strictest
 * `response_format` the provider accepts (a strict JSON schema, else JSON mode, else the prompt alone) and remembers,
 * per model, which one that was. It heartbeats while the (non-streamed) verdict is awaited, and a cancellation
 * aborts the request in flight. A what-if fork's request that the original run's critic sent already is answered with
 * the decision it got then (`replay`); the response format is left out of its hash, since a worker picks it, not the run.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { z } from 'zod';
import type { CritiqueOutcome, CritiqueRequest } from '../common/chat';
import { emptyUsage, isRecordedCritique } from '../common/chat-helpers';
import { FailureType } from '../common/failures';
import { requestHash as hashRequest } from '../common/replay';
import { criticCall } from '../common/sinks';
import type { ProviderBudget } from '../quota';
import { classifyModelError } from './errors';
import { budgeted } from './quota';
import { routeOf, secretsOf, type Providers } from './providers';
import { withKeyRotation } from './key-rotation';
import { heartbeating } from './heartbeat';
import { stoppableCall, type ModelCallsInFlight } from './calls-in-flight';
import { usageOf } from './usage';
import { recordProvider } from './genai-spans';

const ACTIONS = ['continue', 'retry', 'replan', 'complete'] as const;

const DecisionSchema = z.object({
  action: z.enum(ACTIONS),
  reason: z.string().min(1),
  // One scale, seed 000's: 0 to 100, as the prompt asks. A 1 is 1%, never read as a share.
  confidence: z.number().min(0).max(100),
});

/** The decision as a strict Structured Outputs schema: every property required, no others, no unsupported keywords. */
const DECISION_JSON_SCHEMA = {
  type: 'object',
  properties: {
    action: { type: 'string', enum: [...ACTIONS] },
    reason: { type: 'string' },
    confidence: { type: 'number', description: 'how sure you are, from 0 to 100' },
  },
  required: ['action', 'reason', 'confidence'],
  additionalProperties: false,
};

const CRITIC_PROMPT =
  'You review an assistant\'s final answer to a task. Reply with JSON only: ' +
  '{"action": "complete" | "retry" | "replan", "reason": string, "confidence": number from 0 to 100}. ' +
  'Use "complete" when the answer does the task, "retry" when it is close but wrong or incomplete, "replan" when the approach is wrong.';

const TOOL_CRITIC_PROMPT =
  "You review the outcome of an assistant's tool calls toward a task. Reply with JSON only: " +
  '{"action": "continue" | "retry" | "replan", "reason": string, "confidence": number from 0 to 100}. ' +
  'Use "continue" when the results move the task forward, "retry" when the calls should be made again differently, "replan" when the approach is wrong.';

/** What the critic is shown: the task and the final answer, or the task and a tool step's calls with their results. */
export function criticMessages(request: CritiqueRequest): Array<{ role: 'system' | 'user'; content: string }> {
  const task = `${request.context ? `Conversation before the task:\n${request.context}\n\n` : ''}Task:\n${request.task}`;
  if (!request.toolResults) return [{ role: 'system', content: CRITIC_PROMPT }, { role: 'user', content: `${task}\n\nAnswer:\n${request.answer}` }];
  const calls = request.toolResults.map((r, i) => `${i + 1}. ${r.name} ${r.arguments}\n${r.ok ? 'Result' : 'Error'}: ${r.content}`).join('\n\n');
  const said = request.answer.trim() ? `Assistant said:\n${request.answer}\n\n` : '';
  return [{ role: 'system', content: TOOL_CRITIC_PROMPT }, { role: 'user', content: `${task}\n\n${said}Tool calls:\n${calls}` }];
}

/** How the critic asks for JSON, strictest first; each provider refusal moves one step down. */
export const CRITIC_RESPONSE_FORMATS = ['json_schema', 'json_object', 'plain'] as const;
export type CriticResponseFormat = (typeof CRITIC_RESPONSE_FORMATS)[number];

const RESPONSE_FORMAT: Record<CriticResponseFormat, ChatCompletionCreateParamsNonStreaming['response_format']> = {
  json_schema: { type: 'json_schema', json_schema: { name: 'critique', strict: true, schema: DECISION_JSON_SCHEMA } },
  json_object: { type: 'json_object' },
  plain: undefined,
};

/** What providers say when they refuse a response format: OpenAI, vLLM, Ollama, llama.cpp, Gemini, DashScope phrasings. */
const FORMAT_REFUSED = /response_format|response format|json_schema|json_object|json mode|structured output|guided_json/i;

/**
 * A provider's 400 (or 422) about the response format. Matched loosely on status and text, so a reworded
 * classification in errors.ts still reads the same.
 */
export function refusesResponseFormat(err: unknown): boolean {
  const status = (err as { status?: unknown } | undefined)?.status;
  const failure = classifyModelError(err);
  const badRequest = status === 400 || status === 422 || /BadRequest$/.test(failure.type ?? '');
  const message = typeof (err as { message?: unknown } | undefined)?.message === 'string' ? (err as Error).message : '';
  return badRequest && FORMAT_REFUSED.test(`${message} ${failure.message}`);
}

export function createCritiqueAnswer(deps: { openai: OpenAI; defaultModel: string; budget?: ProviderBudget; providers?: Providers; callsInFlight?: ModelCallsInFlight }) {
  /** Per model, the strictest response format this worker's provider accepted (or has not refused yet). */
  const formats = new Map<string, CriticResponseFormat>();

  return async function critiqueAnswer(request: CritiqueRequest): Promise<CritiqueOutcome> {
    const ctx = Context.current();
    const model = request.model ?? deps.defaultModel;
    const messages = criticMessages(request);
    const requestHash = hashRequest({ kind: 'critic', model, messages, tools: null, maxOutputTokens: null });
    const recorded = request.replay?.[requestHash];
    // A what-if fork's recorded decision on this very request: no provider call, no tokens.
    if (recorded && isRecordedCritique(recorded)) return { ...recorded.critique, usage: emptyUsage(), requestHash, replayed: true };
    let format = formats.get(model) ?? CRITIC_RESPONSE_FORMATS[0];
    const route = await routeOf(deps, model);
    recordProvider(route);

    const ask = async (signal: AbortSignal): Promise<ChatCompletion> => {
      for (;;) {
        try {
          const responseFormat = RESPONSE_FORMAT[format];
          const id = `${ctx.info.workflowExecution?.workflowId ?? ctx.info.activityId}:critic:${request.callNumber}:${format}`;
          return await budgeted(deps.budget, id, messages, signal, () =>
            withKeyRotation(route, deps.providers, () => signal.aborted, ctx, (client) =>
              client.chat.completions.create({ model: route.model, messages, ...(responseFormat ? { response_format: responseFormat } : {}) }, { signal }),
            ),
          );
        } catch (err) {
          if (signal.aborted) throw new CancelledFailure('model critique cancelled');
          const next = CRITIC_RESPONSE_FORMATS[CRITIC_RESPONSE_FORMATS.indexOf(format) + 1];
          if (!next || !refusesResponseFormat(err)) throw classifyModelError(err, secretsOf(deps));
          ctx.log.info('the provider refused the response format; asking with the next one', { model, refused: format, next });
          format = next;
          formats.set(model, next);
        }
      }
    };

    // The verdict is not streamed: the ticker keeps the activity alive (and cancellable) while the model writes it, and
    // the run stops it at once when it runs here.
    const response = await heartbeating(
      () => ({ callNumber: request.callNumber, format }),
      () => stoppableCall(ctx, deps.callsInFlight, criticCall(request.callNumber), ask),
    );
    const content = response.choices[0]?.message?.content ?? '';
    const json = content.slice(content.indexOf('{'), content.lastIndexOf('}') + 1);
    const parsed = DecisionSchema.safeParse(safeJson(json));
    if (!parsed.success) {
      throw ApplicationFailure.create({ type: FailureType.CritiqueUnparsable, message: `the critic did not answer with a decision: ${content.slice(0, 200)}`, nonRetryable: true });
    }
    return { ...parsed.data, usage: usageOf(response.usage), requestHash };
  };
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
