/**
 * Model fallback, provider routing and conversations in and out, without a server: the machine's MODEL_UNAVAILABLE
 * row, the failures that lead to it, the input conversation's validation, the providers' routing and key cooldown,
 * and LLM_PROVIDERS parsing. The end-to-end runs are in test/model-fallback.test.ts.
 */
import OpenAI from 'openai';
import { Providers } from '../src/activities/providers';
import type { ModelResponse } from '../src/common/chat';
import { ModelErrorType } from '../src/common/failures';
import { parseAgentRunInput, type AgentRunInput } from '../src/common/input';
import { llmSettings } from '../src/config';
import { modelFailure, transition, type AgentEvent } from '../src/machine/machine';
import { initialSnapshot, type RunSnapshot } from '../src/machine/snapshot';
import { publicView, runResult } from '../src/workflows/view';

const T0 = '2026-01-01T00:00:00.000Z';

function snapshot(input: Partial<AgentRunInput> = {}): RunSnapshot {
  const parsed = parseAgentRunInput({ prompt: 'do the task', ...input });
  if (!parsed.ok) throw new Error(parsed.error);
  return initialSnapshot(parsed.value, T0);
}

function step(s: RunSnapshot, e: AgentEvent): RunSnapshot {
  const r = transition(s, e, T0);
  if (!r.ok) throw new Error(r.error);
  return r.snapshot;
}

const answer = (text: string, model: string): ModelResponse => ({
  text,
  toolCalls: [],
  usage: { promptTokens: 1_000_000, completionTokens: 0, totalTokens: 1_000_000 },
  finishReason: 'stop',
  model,
});

describe('MODEL_UNAVAILABLE', () => {
  test('the failures no retry of the same model mends become MODEL_UNAVAILABLE; others stay MODEL_FAILED', () => {
    for (const type of [ModelErrorType.NotFound, ModelErrorType.Authentication, ModelErrorType.PermissionDenied, ModelErrorType.QuotaExceeded, ModelErrorType.RetriesExhausted]) {
      expect(modelFailure(type, 'x').type).toBe('MODEL_UNAVAILABLE');
    }
    expect(modelFailure(ModelErrorType.BadRequest, 'x').type).toBe('MODEL_FAILED');
    expect(modelFailure(undefined, 'x').type).toBe('MODEL_FAILED');
  });

  test('moves the same model step to the next fallback model, in the log and the state, without counting a loop', () => {
    let s = step(snapshot({ model: 'a', fallbackModels: ['b', 'c'] }), { type: 'START' });
    const r = transition(s, { type: 'MODEL_UNAVAILABLE', error: 'model or endpoint not found (404 model_not_found)' }, T0);
    if (!r.ok) throw new Error(r.error);
    s = r.snapshot;
    expect(s.phase.type).toBe('STREAMING');
    expect(s.counters.loops).toBe(1);
    expect(s.logs.transitions.at(-1)).toMatchObject({ from: 'STREAMING', to: 'STREAMING', event: 'MODEL_UNAVAILABLE' });
    const calls = r.commands.filter((c) => c.type === 'callModel');
    expect(calls).toHaveLength(1);
    expect(calls[0].type === 'callModel' && calls[0].request.model).toBe('b');
    const view = publicView(s, false);
    expect(view.model).toBe('b');
    expect(view.modelSwitches).toEqual([{ from: 'a', to: 'b', error: 'model or endpoint not found (404 model_not_found)', step: s.counters.step, at: T0 }]);
    // The next one, then none left: the run fails as with any final model error.
    s = step(s, { type: 'MODEL_UNAVAILABLE', error: 'refused' });
    expect(publicView(s, false).model).toBe('c');
    s = step(s, { type: 'MODEL_UNAVAILABLE', error: 'gone too' });
    expect(s.phase.type).toBe('FAILED');
    expect(s.reason?.text).toBe('model call failed: gone too');
  });

  test('from PLANNING, the plan is asked of the fallback model', () => {
    const s = step(step(snapshot({ plan: true, fallbackModels: ['b'] }), { type: 'START' }), { type: 'MODEL_UNAVAILABLE', error: 'x' });
    expect(s.phase.type).toBe('PLANNING');
    expect(s.logs.modelSwitches?.[0]).toMatchObject({ from: null, to: 'b' });
  });

  test('usage is priced by the model in use', () => {
    const prices = { a: { inputPerMTok: 1, outputPerMTok: 1 }, b: { inputPerMTok: 5, outputPerMTok: 5 } };
    let s = step(snapshot({ model: 'a', fallbackModels: ['b'], budget: { maxCostUsd: 100, prices } }), { type: 'START' });
    s = step(s, { type: 'MODEL_UNAVAILABLE', error: 'gone' });
    s = step(s, { type: 'MODEL_RESPONDED', response: answer('done', 'b') });
    expect(s.usage.costUsd).toBe(5);
  });
});

describe('conversations in and out', () => {
  const prior = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: [{ type: 'text', text: 'Read a.txt' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'readFile', arguments: '{"path":"a.txt"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'hello' },
    { role: 'assistant', content: 'It says hello.' },
  ];

  test('a prior conversation comes before the prompt; its system message is the system prompt', () => {
    const s = snapshot({ messages: prior as AgentRunInput['messages'] });
    expect(s.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Read a.txt' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'readFile', arguments: '{"path":"a.txt"}' }] },
      { role: 'tool', toolCallId: 'c1', content: 'hello' },
      { role: 'assistant', content: 'It says hello.' },
      { role: 'user', content: 'do the task' },
    ]);
    expect(snapshot({ messages: prior as AgentRunInput['messages'], systemPrompt: 'mine' }).messages[0]).toEqual({ role: 'system', content: 'mine' });
  });

  test.each([
    [[{ role: 'bot', content: 'x' }], 'messages.0.role: role must be one of system, user, assistant, tool'],
    [[{ role: 'user' }], 'messages.0.content: must be a string or an array of text parts'],
    [[{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }], 'messages.1.role: a system message may only come first'],
    [[{ role: 'tool', tool_call_id: 'zz', content: 'r' }], 'messages.0.tool_call_id: answers no tool call of the assistant message before it (zz)'],
    [[prior[2]], 'messages.0: tool calls c1 have no tool message answering them'],
    [[{ role: 'assistant', content: null }], 'messages.0.content: an assistant message needs content or tool_calls'],
    [[{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }], 'messages.0.content'],
  ])('refuses %j naming the message and the field', (messages, error) => {
    const parsed = parseAgentRunInput({ prompt: 'p', messages });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(error);
  });

  test('returnMessages: the result carries the conversation in OpenAI format', () => {
    let s = step(snapshot({ messages: prior.slice(1) as AgentRunInput['messages'], returnMessages: true }), { type: 'START' });
    s = step(s, { type: 'MODEL_RESPONDED', response: answer('Done.', 'm') });
    const result = runResult(s);
    // Text parts come back as one string; the rest as it was given, then the run's own turns.
    expect(result.messages?.slice(1)).toEqual([{ role: 'user', content: 'Read a.txt' }, ...prior.slice(2), { role: 'user', content: 'do the task' }, { role: 'assistant', content: 'Done.' }]);
    expect(runResult(step(step(snapshot(), { type: 'START' }), { type: 'MODEL_RESPONDED', response: answer('Done.', 'm') })).messages).toBeUndefined();
  });
});

describe('providers', () => {
  const client = (key: string) => new OpenAI({ baseURL: 'http://127.0.0.1:9/v1', apiKey: key });

  test('a configured prefix picks the provider; any other name, slashes and all, goes to the default', async () => {
    const p = new Providers({ default: [client('d')], groq: [client('g1'), client('g2')] });
    expect(await p.route('groq/llama-3')).toMatchObject({ provider: 'groq', model: 'llama-3' });
    expect((await p.route('groq/llama-3')).keys.map((k) => k.client.apiKey)).toEqual(['g1', 'g2']);
    expect(await p.route('meta-llama/Llama-3')).toMatchObject({ provider: 'default', model: 'meta-llama/Llama-3' });
    expect(await p.route('gpt-4o')).toMatchObject({ provider: 'default', model: 'gpt-4o' });
  });

  test('a key that failed comes last until its cooldown is over', async () => {
    let now = 0;
    const p = new Providers({ default: [client('k1'), client('k2')] }, 1_000, () => now);
    await p.failed((await p.route('m')).keys[0]);
    expect((await p.route('m')).keys.map((k) => k.client.apiKey)).toEqual(['k2', 'k1']);
    now = 1_001;
    expect((await p.route('m')).keys.map((k) => k.client.apiKey)).toEqual(['k1', 'k2']);
  });

  test('LLM_API_KEY takes several keys; LLM_PROVIDERS is checked, naming the field', () => {
    expect(llmSettings({ LLM_API_KEY: 'k1, k2' })).toMatchObject({ apiKey: 'k1', apiKeys: ['k1', 'k2'] });
    expect(llmSettings({ LLM_PROVIDERS: '{"groq":{"baseURL":"https://api.groq.com/openai/v1","apiKeys":["g"]}}' }).providers).toEqual({
      groq: { baseURL: 'https://api.groq.com/openai/v1', apiKeys: ['g'] },
    });
    expect(() => llmSettings({ LLM_PROVIDERS: '{"groq":{"baseURL":"ftp://x"}}' })).toThrow('LLM_PROVIDERS.groq.baseURL: must be an http(s) URL');
    expect(() => llmSettings({ LLM_PROVIDERS: '{"groq":{"baseURL":"https://x","apiKeys":[1]}}' })).toThrow('LLM_PROVIDERS.groq.apiKeys');
    expect(() => llmSettings({ LLM_PROVIDERS: '[' })).toThrow('LLM_PROVIDERS is not JSON');
  });
});
