/**
 * The OpenTelemetry GenAI semantic conventions' names this worker writes on its spans (semantic-conventions 1.37 and
 * later: `gen_ai.provider.name`, with the older `gen_ai.system` beside it for readers that still look for it). Model
 * calls are `chat` spans, tool calls `execute_tool` spans, and the run's workflow span is the `invoke_agent` one.
 * Names only: the spans are made where the work runs (activities/genai-spans.ts, workflows/genai.ts).
 */
export const GenAiAttribute = {
  OPERATION: 'gen_ai.operation.name',
  PROVIDER: 'gen_ai.provider.name',
  /** Deprecated by `gen_ai.provider.name` in the conventions; written too, with the same value. */
  SYSTEM: 'gen_ai.system',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  RESPONSE_MODEL: 'gen_ai.response.model',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  AGENT_ID: 'gen_ai.agent.id',
  AGENT_NAME: 'gen_ai.agent.name',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
  /** The conventions' general error attribute: the failure's type (a ModelErrorType, or `tool_error`). */
  ERROR_TYPE: 'error.type',
} as const;

/** `gen_ai.operation.name` values. */
export const GenAiOperation = { CHAT: 'chat', EXECUTE_TOOL: 'execute_tool', INVOKE_AGENT: 'invoke_agent' } as const;
export type GenAiOperation = (typeof GenAiOperation)[keyof typeof GenAiOperation];
