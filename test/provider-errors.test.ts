/**
 * Providers' error bodies as they were recorded, one row each, served over HTTP by the scripted model, read by the
 * real `openai` client and classified by classifyModelError. Each row names where its body was seen.
 * RELIABILITY.md ("Real providers") summarises this table.
 */
import type { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { classifyModelError, ModelErrorType } from '../src/activities/errors';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { openAIClient } from '../src/worker';

const T = ModelErrorType;

interface Row {
  provider: string;
  /** Where the body (or, when two are named, its message and its shape) was seen. */
  source: string;
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  class: ModelErrorType;
  retried: boolean;
  delayMs?: number;
  /** A body the plain client reads only the status of (it reads `{ error }` objects only); readableErrorBodies reads it. */
  unreadable?: 'root array' | 'top-level message';
  /** The class with the plain client, when the status alone leads elsewhere. */
  plainClass?: ModelErrorType;
}

const ROWS: Row[] = [
  {
    provider: 'OpenAI',
    source: 'github.com/Huanshere/VideoLingo/issues/34',
    status: 429,
    body: {
      error: {
        message:
          'Rate limit reached for gpt-4o in organization org-3vHNf8JxesfafaW5WNqB on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more. You can increase your rate limit by adding a payment method to your account at https://platform.openai.com/account/billing.',
        type: 'requests',
        param: null,
        code: 'rate_limit_exceeded',
      },
    },
    class: T.RateLimit,
    retried: true,
    delayMs: 20_000,
  },
  {
    provider: 'OpenAI',
    source: 'github.com/vanderschaarlab/climb/issues/1',
    status: 429,
    body: {
      error: {
        message:
          'Request too large for gpt-4o in organization org-VDAWofJASuLH0vVz8o9tiQZr on tokens per min (TPM): Limit 30000, Requested 30601. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.',
        type: 'tokens',
        param: null,
        code: 'rate_limit_exceeded',
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'OpenAI',
    source: 'github.com/OpenHands/OpenHands/issues/998',
    status: 429,
    body: {
      error: {
        message:
          'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
        type: 'insufficient_quota',
        param: null,
        code: 'insufficient_quota',
      },
    },
    class: T.QuotaExceeded,
    retried: false,
  },
  {
    provider: 'OpenAI',
    source: 'github.com/chatanywhere/GPT_API_free/issues/62',
    status: 401,
    body: {
      error: {
        message:
          'Incorrect API key provided: sk-VKMIs***************************************wjh3. You can find your API key at https://platform.openai.com/account/api-keys.',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    },
    class: T.Authentication,
    retried: false,
  },
  {
    provider: 'OpenAI',
    source: 'github.com/crewAIInc/crewAI-examples/issues/121',
    status: 400,
    body: {
      error: {
        message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'OpenAI',
    source: 'github.com/ikechan8370/chatgpt-plugin/issues/125',
    status: 503,
    body: {
      error: {
        message:
          'That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID 500d9fff2057e4af93a280f67002c342 in your message.)',
        type: 'server_error',
        param: null,
        code: null,
      },
    },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'Azure OpenAI',
    source: 'github.com/openai/openai-agents-python/issues/806',
    status: 400,
    body: {
      error: {
        message:
          "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
        code: 'content_filter',
        innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { jailbreak: { detected: true, filtered: true } } },
      },
    },
    class: T.BadRequest,
    retried: false,
  },
  {
    provider: 'Azure OpenAI',
    source: 'github.com/microsoft/copilot-camp/issues/551',
    status: 429,
    body: { error: { code: '429', message: 'Rate limit is exceeded. Try again in 2 seconds.' } },
    headers: { 'x-ms-region': 'North Central US', 'x-ratelimit-limit-requests': '8', 'x-ratelimit-remaining-requests': '7', 'x-ratelimit-remaining-tokens': '1014' },
    class: T.RateLimit,
    retried: true,
    delayMs: 2_000,
  },
  {
    provider: 'Azure OpenAI',
    source: 'github.com/vanderschaarlab/climb/issues/1',
    status: 429,
    body: {
      error: {
        code: '429',
        message:
          'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-08-01-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.',
      },
    },
    class: T.RateLimit,
    retried: true,
    // 86,400 s asked, capped at 10 minutes.
    delayMs: 600_000,
  },
  {
    provider: 'Azure OpenAI',
    source: 'github.com/SciSharp/BotSharp/issues/386',
    status: 401,
    body: {
      error: {
        code: '401',
        message:
          'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
      },
    },
    class: T.Authentication,
    retried: false,
  },
  {
    provider: 'Azure OpenAI',
    source: 'github.com/chatboxai/chatbox/issues/861',
    status: 404,
    body: {
      error: {
        code: 'DeploymentNotFound',
        message: 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.',
      },
    },
    class: T.NotFound,
    retried: false,
  },
  {
    provider: 'vLLM',
    source: 'github.com/vllm-project/vllm/pull/36789',
    status: 400,
    body: { error: { message: "Input length (11680) exceeds model's maximum context length (4096).", type: 'BadRequestError', param: null, code: 400 } },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'vLLM',
    source: 'github.com/vllm-project/vllm/pull/33425',
    status: 400,
    body: {
      error: {
        message:
          "This model's maximum context length is 2048 tokens. However, your request has 8 input tokens plus 2045 'max_tokens'. Please reduce one or the other. (parameter=input_tokens, max_tokens, value=(8, 2045))",
        type: 'BadRequestError',
        param: 'input_tokens, max_tokens',
        code: 400,
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'vLLM',
    source: 'vllm-project/vllm vllm/v1/engine/exceptions.py (EngineDeadError) + vllm/entrypoints/openai/engine/serving.py (create_error_response)',
    status: 500,
    body: { error: { message: 'EngineCore encountered an issue. See stack trace (above) for the root cause.', type: 'InternalServerError', param: null, code: 500 } },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'vLLM 0.4 (top-level body)',
    source: 'github.com/vllm-project/vllm/issues/4667',
    status: 400,
    body: { object: 'error', message: 'max_tokens must be at least 1, got -186.', type: 'BadRequestError', param: null, code: 400 },
    unreadable: 'top-level message',
    class: T.BadRequest,
    retried: false,
  },
  {
    provider: 'vLLM 0.4 (top-level body)',
    source: 'message: github.com/ruipeterpan/specreason/issues/4; shape: github.com/vllm-project/vllm/issues/4667',
    status: 400,
    body: {
      object: 'error',
      message:
        "This model's maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 in the completion). Please reduce the length of the messages or completion.",
      type: 'BadRequestError',
      param: null,
      code: 400,
    },
    unreadable: 'top-level message',
    class: T.ContextOverflow,
    retried: false,
    plainClass: T.BadRequest,
  },
  {
    provider: 'llama.cpp llama-server',
    source: 'issue #10 (llama-server run); ggml-org/llama.cpp tools/server/server-common.cpp format_error_response',
    status: 400,
    body: {
      error: {
        code: 400,
        message: 'request (4971 tokens) exceeds the available context size (2048 tokens), try increasing it',
        type: 'exceed_context_size_error',
        n_prompt_tokens: 4971,
        n_ctx: 2048,
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'llama.cpp llama-server',
    source: 'ggml-org/llama.cpp tools/server/server.cpp middleware_server_state ("Loading model", ERROR_TYPE_UNAVAILABLE)',
    status: 503,
    body: { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'llama.cpp llama-server',
    source: 'message: github.com/ggml-org/llama.cpp/issues/17316; shape: server-common.cpp (ERROR_TYPE_SERVER)',
    status: 500,
    body: { error: { code: 500, message: 'Invalid input batch.', type: 'server_error' } },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'llama.cpp llama-server',
    source: 'ggml-org/llama.cpp tools/server/server.cpp middleware_validate_api_key ("Invalid API Key", ERROR_TYPE_AUTHENTICATION)',
    status: 401,
    body: { error: { code: 401, message: 'Invalid API Key', type: 'authentication_error' } },
    class: T.Authentication,
    retried: false,
  },
  {
    provider: 'Ollama /v1',
    source: 'ollama/ollama server/routes.go handleScheduleError + openai/openai.go NewError + middleware/openai.go writeError',
    status: 404,
    body: { error: { message: 'model "llama3.2" not found, try pulling it first', type: 'not_found_error', param: null, code: null } },
    class: T.NotFound,
    retried: false,
  },
  {
    provider: 'Ollama /v1',
    source: 'ollama/ollama llm/llama_server.go (prompt longer than the context, context shift off) + openai/openai.go NewError',
    status: 400,
    body: {
      error: {
        message:
          'the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'Ollama /v1',
    source: 'ollama/ollama server/sched.go ErrMaxQueue + server/routes.go handleScheduleError (503) + openai/openai.go NewError',
    status: 503,
    body: { error: { message: 'server busy, please try again.  maximum pending requests exceeded', type: 'api_error', param: null, code: null } },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'Ollama (error as a string)',
    source: 'github.com/ollama/ollama/issues/15934',
    status: 503,
    body: { error: 'Server overloaded, please retry shortly (ref: aaa65c70-cfa0-446b-86f1-4ab0e2deb9e4)' },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'DashScope (Qwen)',
    source: 'github.com/agentscope-ai/QwenPaw/issues/6255',
    status: 400,
    body: {
      error: { code: 'invalid_parameter_error', message: '<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 983616]', param: null, type: 'invalid_request_error' },
      request_id: '81a373d6-28bd-9968-8335-e22a2127c41b',
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'DashScope (Qwen)',
    source: 'github.com/camel-ai/owl/issues/432',
    status: 400,
    body: {
      error: { code: 'data_inspection_failed', param: null, message: 'Input data may contain inappropriate content.', type: 'data_inspection_failed' },
      id: 'chatcmpl-deab386b-2562-9a7b-b8fa-0ba9385a5c28',
      request_id: 'deab386b-2562-9a7b-b8fa-0ba9385a5c28',
    },
    class: T.BadRequest,
    retried: false,
  },
  {
    provider: 'DashScope (Qwen)',
    source: 'body: github.com/hsliuping/TradingAgents-CN/issues/170; status: alibabacloud.com/help/en/model-studio/error-code',
    status: 400,
    body: {
      error: { code: 'Arrearage', param: null, message: 'Access denied, please make sure your account is in good standing.', type: 'Arrearage' },
      id: 'chatcmpl-f9fdb027-830c-9e05-8366-ce479a878825',
      request_id: 'f9fdb027-830c-9e05-8366-ce479a878825',
    },
    class: T.QuotaExceeded,
    retried: false,
  },
  {
    provider: 'DashScope native API (top-level body)',
    source: 'github.com/dinoanderson/qwen_cli_coder/issues/1',
    status: 401,
    body: { code: 'InvalidApiKey', message: 'Invalid API-key provided.', request_id: '01415ff3-53f4-989d-83c0-3eb61fa1418e' },
    unreadable: 'top-level message',
    class: T.Authentication,
    retried: false,
  },
  {
    provider: 'Anthropic',
    source: 'github.com/anthropics/claude-code/issues/5184',
    status: 529,
    body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'Anthropic',
    source: 'github.com/anthropics/anthropic-sdk-python/issues/938',
    status: 413,
    body: { error: { type: 'request_too_large', message: 'Request exceeds the maximum size' } },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'Anthropic',
    source: 'github.com/anthropics/claude-code/issues/62560',
    status: 400,
    body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 211180 tokens > 200000 maximum' }, request_id: 'req_011CbRHLp6ffMfsnsULngXLv' },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'Gemini (root array)',
    source: 'discuss.ai.google.dev/t/issue-with-openai-compatible-api-error-response-root-array-causing-misleading-no-body-errors-in-openai-node-api-library-openai/82899',
    status: 429,
    body: [
      {
        error: {
          code: 429,
          message:
            "Gemini 2.5 Pro Preview doesn't have a free quota tier. Please use Gemini 2.5 Pro Experimental (models/gemini-2.5-pro-exp-03-25) instead. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
              violations: [
                {
                  quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
                  quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier',
                  quotaDimensions: { model: 'gemini-2.5-pro-exp', location: 'global' },
                },
              ],
            },
          ],
        },
      },
    ],
    unreadable: 'root array',
    class: T.RateLimit,
    retried: true,
  },
  {
    provider: 'Gemini (root array)',
    source: 'github.com/google-gemini/gemini-cli/issues/6678',
    status: 400,
    body: [
      {
        error: {
          code: 400,
          message: 'The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).',
          errors: [{ message: 'The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).', domain: 'global', reason: 'badRequest' }],
          status: 'INVALID_ARGUMENT',
        },
      },
    ],
    unreadable: 'root array',
    class: T.ContextOverflow,
    retried: false,
    plainClass: T.BadRequest,
  },
  {
    provider: 'Gemini',
    source: 'github.com/appatalks/eva-agent/issues/50',
    status: 503,
    body: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } },
    class: T.ServerError,
    retried: true,
  },
  {
    provider: 'OpenRouter',
    source: 'github.com/Aider-AI/aider/issues/3721',
    status: 400,
    body: {
      error: {
        message:
          'This endpoint\'s maximum context length is 131072 tokens. However, you requested about 141607 tokens (10535 of text input, 131072 in the output). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
        code: 400,
        metadata: { provider_name: 'Chutes' },
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'OpenRouter',
    source: 'github.com/babikov/doka-site/issues/7',
    status: 402,
    body: {
      error: {
        message:
          'This request requires more credits, or fewer max_tokens. You requested up to 65536 tokens, but can only afford 10114. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account',
        code: 402,
        metadata: { provider_name: null },
      },
      user_id: 'user_',
    },
    class: T.QuotaExceeded,
    retried: false,
  },
  {
    provider: 'OpenRouter',
    source: 'github.com/Gitlawb/openclaude/issues/936',
    status: 429,
    body: {
      error: {
        message: 'Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day',
        code: 429,
        metadata: { headers: { 'X-RateLimit-Limit': '50', 'X-RateLimit-Remaining': '0' } },
      },
    },
    class: T.RateLimit,
    retried: true,
  },
  {
    provider: 'Groq',
    source: 'github.com/assafelovic/gpt-researcher/issues/985',
    status: 413,
    body: {
      error: {
        message:
          'Request too large for model `llama-3.1-70b-versatile` in organization `org_01hw8f0aa0ekmrn70ffm2zkdv1` on tokens per minute (TPM): Limit 6000, Requested 14368, please reduce your message size and try again. Visit https://console.groq.com/docs/rate-limits for more information.',
        type: 'tokens',
        code: 'rate_limit_exceeded',
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'DeepSeek',
    source: 'github.com/evalstate/fast-agent/issues/621',
    status: 400,
    body: {
      error: {
        message:
          "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      },
    },
    class: T.ContextOverflow,
    retried: false,
  },
  {
    provider: 'DeepSeek',
    source: 'body: github.com/Aider-AI/aider/issues/4851; status: github.com/continuedev/continue/issues/9942',
    status: 402,
    body: { error: { message: 'Insufficient Balance', type: 'unknown_error', param: null, code: 'invalid_request_error' } },
    class: T.QuotaExceeded,
    retried: false,
  },
  {
    provider: 'nginx in front (HTML)',
    source: 'github.com/MiniMax-AI/MiniMax-M2/issues/16, github.com/Wei-Shaw/claude-relay-service/issues/630',
    status: 413,
    body:
      '<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.26.0 (Ubuntu)</center>\r\n</body>\r\n</html>\r\n',
    headers: { 'content-type': 'text/html' },
    class: T.ContextOverflow,
    retried: false,
  },
];

/** Classes Temporal retries (errors.ts CLASSES). */
const RETRIED = new Set<ModelErrorType>([T.RateLimit, T.ServerError, T.Timeout, T.Connection, T.Unknown]);

let model: ScriptedModel;
let plain: OpenAI;
let readable: OpenAI;

beforeAll(async () => {
  model = await startScriptedModel();
  plain = new OpenAI({ baseURL: model.url, apiKey: 'scripted', maxRetries: 0 });
  // The worker's own client, which reads error bodies through readableErrorBodies.
  readable = openAIClient({ baseURL: model.url, apiKey: 'scripted' });
  ROWS.forEach((row, i) => model.register(`row-${i}`, () => ({ error: { status: row.status, body: row.body, headers: row.headers } })));
});
afterAll(async () => model?.close());

/** The classified failure of one streamed request, as the model activity makes it. */
async function failureOf(client: OpenAI, script: string): Promise<ApplicationFailure> {
  try {
    const stream = await client.chat.completions.create({ model: script, messages: [{ role: 'user', content: 'hi' }], stream: true });
    for await (const chunk of stream) void chunk;
  } catch (err) {
    return classifyModelError(err, ['scripted-secret-key']);
  }
  throw new Error(`${script} did not fail`);
}

const statusCount = (message: string, status: number) => message.match(new RegExp(`(?<!\\d)${status}(?!\\d)`, 'g'))?.length ?? 0;

describe('recorded provider errors through the openai client', () => {
  test.each(ROWS.map((row, i) => [`${row.provider} ${row.status} -> ${row.class.split('.')[1]} (${row.source.slice(0, 60)})`, row, i] as const))(
    '%s',
    async (_name, row, i) => {
      expect(row.retried).toBe(RETRIED.has(row.class));
      const viaReadable = await failureOf(readable, `row-${i}`);
      expect(viaReadable.type).toBe(row.class);
      expect(viaReadable.nonRetryable).toBe(!row.retried);
      expect(viaReadable.nextRetryDelay ?? undefined).toBe(row.delayMs);

      const viaPlain = await failureOf(plain, `row-${i}`);
      const plainClass = row.plainClass ?? row.class;
      expect(viaPlain.type).toBe(plainClass);
      expect(viaPlain.nonRetryable).toBe(!RETRIED.has(plainClass));
      if (row.unreadable) expect(viaPlain.message).toMatch(/: no error body the client could read$/);
      else expect(viaPlain.message).toBe(viaReadable.message);

      for (const failure of [viaReadable, viaPlain]) {
        expect(failure.message).toContain(`(${row.status}`);
        expect(statusCount(failure.message, row.status)).toBe(1);
        expect(failure.message).not.toMatch(/\n/);
      }
    },
  );

  test('the llama-server overflow reads as one line, status once', async () => {
    const i = ROWS.findIndex((r) => (r.body as { error?: { type?: string } }).error?.type === 'exceed_context_size_error');
    expect((await failureOf(plain, `row-${i}`)).message).toBe(
      'context too long for the model (400 exceed_context_size_error): request (4971 tokens) exceeds the available context size (2048 tokens), try increasing it',
    );
  });

  test('a body the plain client cannot read still says so, and keeps its status', async () => {
    const i = ROWS.findIndex((r) => r.unreadable === 'root array' && r.plainClass);
    expect((await failureOf(plain, `row-${i}`)).message).toBe('the model provider rejected the request (400): no error body the client could read');
    expect((await failureOf(readable, `row-${i}`)).message).toBe(
      'context too long for the model (400 INVALID_ARGUMENT): The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).',
    );
  });

  test('the scripted model sends a recorded body as it is, with its headers', async () => {
    const html = ROWS.find((r) => typeof r.body === 'string')!;
    model.register('raw-html', [{ error: { status: html.status, body: html.body, headers: html.headers } }]);
    const res = await fetch(`${model.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'raw-html', messages: [] }) });
    expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([413, 'text/html', html.body]);

    model.register('raw-array', [{ error: { status: 429, body: [{ error: { code: 429 } }], headers: { 'retry-after': '3' } } }]);
    const array = await fetch(`${model.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'raw-array', messages: [] }) });
    expect([array.status, array.headers.get('content-type'), array.headers.get('retry-after'), await array.json()]).toEqual([
      429,
      'application/json',
      '3',
      [{ error: { code: 429 } }],
    ]);
  });

  test('readableErrorBodies leaves a successful stream alone', async () => {
    model.register('fine', [{ text: 'all good', chunkSize: 3 }]);
    const stream = await readable.chat.completions.create({ model: 'fine', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('all good');
  });
});

describe('a connection dropped mid-stream', () => {
  test("undici's `terminated` is a dropped connection, retried", async () => {
    model.register('reset-mid-stream', [{ text: 'x'.repeat(200), chunkSize: 5, chunkDelayMs: 5, resetAfterChunks: 3 }]);
    const stream = await plain.chat.completions.create({ model: 'reset-mid-stream', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const received: string[] = [];
    const failure = await (async () => {
      try {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      } catch (err) {
        return classifyModelError(err);
      }
      throw new Error('the stream ended without an error');
    })();
    expect(received.join('')).toBe('x'.repeat(15));
    expect([failure.type, failure.nonRetryable, failure.message]).toEqual([
      T.Connection,
      false,
      'connection to the model dropped mid-response: terminated',
    ]);
    expect(model.requests('reset-mid-stream')[0]).toMatchObject({ fault: 'reset', completed: false });
  });
});
