/**
 * Spans in the OpenTelemetry GenAI semantic conventions (common/genai.ts): each model request (the run's calls, the
 * critic's, compaction's) is a `chat {model}` client span, each tool call an `execute_tool {tool}` span, both children
 * of the activity's span. They go to the global tracer provider the worker registers when tracing is on
 * (observability/tracing.ts); without one, @opentelemetry/api hands out spans that record nothing.
 */
import { SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { AzureOpenAI } from 'openai';
import { GenAiAttribute as A, GenAiOperation } from '../common/genai';
import type { ToolCall, ToolResult, Usage } from '../common/chat';
import { DEFAULT_PROVIDER, type Route } from './providers';

const tracer = () => trace.getTracer('durable-agent-worker');

/** What a chat span records of an answer. */
export interface ChatAnswer {
  model?: string;
  usage?: Usage;
  finishReason?: string | null;
}

/**
 * Runs `call` inside a `chat {model}` span: the operation and the model asked for at its start, the provider once the
 * call knows its route (`recordProvider`), the model that answered, its tokens and its finish reason at its end. A
 * call that throws marks the span an error with the failure's type.
 */
export function inChatSpan<T>(model: string, extra: Attributes, call: () => Promise<T>, answer: (result: T) => ChatAnswer | undefined): Promise<T> {
  const attributes: Attributes = { [A.OPERATION]: GenAiOperation.CHAT, [A.REQUEST_MODEL]: model, ...extra };
  return tracer().startActiveSpan(`${GenAiOperation.CHAT} ${model}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      const result = await call();
      const got = answer(result);
      if (got) span.setAttributes(answerAttributes(got));
      return result;
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function answerAttributes({ model, usage, finishReason }: ChatAnswer): Attributes {
  return {
    ...(model ? { [A.RESPONSE_MODEL]: model } : {}),
    ...(usage ? { [A.INPUT_TOKENS]: usage.promptTokens, [A.OUTPUT_TOKENS]: usage.completionTokens } : {}),
    ...(finishReason ? { [A.RESPONSE_FINISH_REASONS]: [finishReason] } : {}),
  };
}

/**
 * The provider of the current chat span, by the conventions' names: `openai` (or `azure.ai.openai`) for the default
 * provider's OpenAI-compatible endpoint, a named provider by its name (`groq`, `mistral_ai`, ...).
 */
export function recordProvider(route: Route): void {
  const span = trace.getActiveSpan();
  if (!span) return;
  const name = route.provider !== DEFAULT_PROVIDER ? route.provider : route.keys[0]?.client instanceof AzureOpenAI ? 'azure.ai.openai' : 'openai';
  // The provider's own name for the model (`groq/llama-3` asks groq for `llama-3`).
  span.setAttributes({ [A.PROVIDER]: name, [A.SYSTEM]: name, [A.REQUEST_MODEL]: route.model });
}

/** Runs one tool call inside an `execute_tool {tool}` span; a result that is not `ok` marks it an error. */
export function inToolSpan(call: ToolCall, run: () => Promise<ToolResult>): Promise<ToolResult> {
  const attributes: Attributes = { [A.OPERATION]: GenAiOperation.EXECUTE_TOOL, [A.TOOL_NAME]: call.name, [A.TOOL_CALL_ID]: call.id, [A.TOOL_TYPE]: 'function' };
  return tracer().startActiveSpan(`${GenAiOperation.EXECUTE_TOOL} ${call.name}`, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
    try {
      const result = await run();
      if (!result.ok) {
        span.setAttribute(A.ERROR_TYPE, 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.content.slice(0, 200) });
      }
      return result;
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function failed(span: Span, err: unknown): void {
  const type = (err as { type?: unknown }).type;
  span.setAttribute(A.ERROR_TYPE, typeof type === 'string' && type ? type : err instanceof Error ? err.name : 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}
