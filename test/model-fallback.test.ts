/**
 * Model fallback, provider prefixes, key rotation and conversations in and out, on the real dev server: the worker's
 * `openai` clients talk HTTP to the scripted model, whose scripts answer the recorded errors of a model that is gone
 * (404 model_not_found), a key refused (401), a quota spent (429 insufficient_quota) and an overloaded provider (503).
 * Driven through the client, and through the gateway.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../src/cli/cli';
import { defineAgent } from '../src/activities';
import { CLAIM_CHECK_ENCODING } from '../src/codec/claim-check';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

const TOKEN = 'fallback-test-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

const refused = { error: { status: 401, message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } };
const noQuota = {
  error: { status: 429, message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', code: 'insufficient_quota' },
};
const overloaded = { error: { status: 503, message: 'The server is overloaded', headers: { 'retry-after-ms': '20' } } };

beforeAll(async () => {
  h = await startAgentHarness(undefined, {
    providers: { keys: ['key-revoked', 'key-good'], named: { alt: ['alt-key'] } },
    agents: [defineAgent({ name: 'resilient', instructions: 'Answer.', model: 'gone-for-agents', fallbackModels: ['works'], tools: [] })],
    // Small enough that a returned conversation goes to the blob store.
    claimCheckThresholdBytes: 2_048,
  });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, pollIntervalMs: 100 });
  h.model.register('works', () => ({ text: 'Answered by works.' }));
  h.model.register('no-quota', () => noQuota);
  h.model.register('overloaded', () => overloaded);
  // 401 for the revoked key, an answer for any other.
  h.model.register('keyed', ({ apiKey }) => (apiKey === 'key-revoked' ? refused : { text: `Answered with ${apiKey}.` }));
  h.model.register('every-key-refused', () => refused);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const api = async (method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};

describe('through the client', () => {
  test('a model that is gone, then one whose every key is refused: the run moves down fallbackModels and answers', async () => {
    const run = await agents.start({ prompt: 'Hello', model: 'gone', fallbackModels: ['every-key-refused', 'works'] });
    const result = await run.result();
    expect(result).toMatchObject({ status: 'COMPLETED', answer: 'Answered by works.' });
    const state = await run.state();
    expect(state.model).toBe('works');
    expect(state.modelSwitches).toEqual([
      expect.objectContaining({ from: 'gone', to: 'every-key-refused', error: expect.stringContaining('404 model_not_found') }),
      expect.objectContaining({ from: 'every-key-refused', to: 'works', error: expect.stringContaining('401 invalid_api_key') }),
    ]);
    const switches = state.transitions.filter((t) => t.event === 'MODEL_UNAVAILABLE');
    expect(switches).toEqual([expect.objectContaining({ from: 'STREAMING', to: 'STREAMING' }), expect.objectContaining({ from: 'STREAMING', to: 'STREAMING' })]);
    // Both keys were tried on the model that refuses them, and each only once: no Temporal retry of a final error.
    expect(h.model.requests('every-key-refused').map((r) => r.apiKey).sort()).toEqual(['key-good', 'key-revoked']);
    expect(state.loops).toBe(1);
  }, 60_000);

  test('a spent quota (429 insufficient_quota) and a provider that keeps failing (503) move to the next model', async () => {
    const quota = await agents.start({ prompt: 'Hello', model: 'no-quota', fallbackModels: ['works'] });
    await expect(quota.result()).resolves.toMatchObject({ status: 'COMPLETED' });
    expect((await quota.state()).modelSwitches[0]).toMatchObject({ from: 'no-quota', to: 'works', error: expect.stringContaining('insufficient_quota') });

    const busy = await agents.start({ prompt: 'Hello', model: 'overloaded', fallbackModels: ['works'] });
    await expect(busy.result()).resolves.toMatchObject({ status: 'COMPLETED' });
    expect((await busy.state()).modelSwitches[0]).toMatchObject({ from: 'overloaded', to: 'works', error: expect.stringContaining('gave up after 10 provider failures') });
  }, 90_000);

  test("a named agent's fallbackModels", async () => {
    const run = await agents.start({ agent: 'resilient', prompt: 'Hello' });
    await expect(run.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Answered by works.' });
    expect((await run.state()).modelSwitches).toEqual([expect.objectContaining({ from: 'gone-for-agents', to: 'works' })]);
  }, 30_000);

  test('without fallbackModels an unavailable model ends the run as before', async () => {
    const run = await agents.start({ prompt: 'Hello', model: 'gone-too' });
    expect((await failureOf(run.result())).message).toMatch(/^model call failed: model or endpoint not found/);
    expect((await run.state()).modelSwitches).toEqual([]);
  }, 30_000);

  test('a refused key is skipped for the next key at once, and for later calls; a provider prefix picks its own keys', async () => {
    const before = h.model.requests('keyed').length;
    const first = await agents.start({ prompt: 'Hello', model: 'keyed' });
    await expect(first.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'Answered with key-good.' });
    expect((await first.state()).modelSwitches).toEqual([]);
    const second = await agents.start({ prompt: 'Hello', model: 'keyed' });
    await expect(second.result()).resolves.toMatchObject({ answer: 'Answered with key-good.' });
    const alt = await agents.start({ prompt: 'Hello', model: 'alt/keyed' });
    await expect(alt.result()).resolves.toMatchObject({ answer: 'Answered with alt-key.' });
    // The revoked key once, then the good key for each call: the second run went straight to it.
    expect(h.model.requests('keyed').slice(before).map((r) => r.apiKey)).toEqual(['key-revoked', 'key-good', 'key-good', 'alt-key']);
  }, 60_000);

  test('a prior conversation goes to the model before the prompt, and the result returns it, claim-checked', async () => {
    const prior = [
      { role: 'system' as const, content: 'You are terse.' },
      { role: 'user' as const, content: 'What is in a.txt?' },
      { role: 'assistant' as const, content: null, tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'readFile', arguments: '{"path":"a.txt"}' } }] },
      { role: 'tool' as const, tool_call_id: 'c1', content: `hello ${'x'.repeat(3_000)}` },
      { role: 'assistant' as const, content: 'It says hello.' },
    ];
    h.model.register('conversation', [{ text: 'Yes, hello.' }]);
    const run = await agents.start({ prompt: 'Is that all?', model: 'conversation', messages: prior, returnMessages: true, tools: [] });
    const result = await run.result();
    const [request] = h.model.requests('conversation');
    expect(request.body.messages).toEqual([...prior, { role: 'user', content: 'Is that all?' }]);
    expect(result.messages).toEqual([...prior, { role: 'user', content: 'Is that all?' }, { role: 'assistant', content: 'Yes, hello.' }]);
    // The result with the conversation is a reference in history; the conversation itself is in the blob store.
    const history = await h.env.client.workflow.getHandle(run.workflowId).fetchHistory();
    const completed = history.events?.find((e) => e.workflowExecutionCompletedEventAttributes)?.workflowExecutionCompletedEventAttributes;
    const encoding = Buffer.from(completed!.result!.payloads![0].metadata!.encoding!).toString();
    expect(encoding).toBe(CLAIM_CHECK_ENCODING);
  }, 30_000);

  test('a bad conversation is refused before anything starts, naming the message and the field', async () => {
    await expect(agents.start({ prompt: 'p', messages: [{ role: 'tool', tool_call_id: 'nope', content: 'r' }] })).rejects.toThrow(
      'messages.0.tool_call_id: answers no tool call of the assistant message before it (nope)',
    );
  });
});

describe('through the CLI', () => {
  const cli = async (argv: string[]) => {
    let out = '';
    let err = '';
    const code = await runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (err += t) });
    return { code, out, err };
  };

  test('--fallback-models, --messages-file and --return-messages; state prints the switch', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'conversation-'));
    const file = path.join(dir, 'conversation.json');
    writeFileSync(file, JSON.stringify([{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello.' }]));
    const started = await cli(['start', 'Again', '--model', 'gone', '--fallback-models', 'works', '--messages-file', file, '--return-messages', '--json']);
    expect(started).toMatchObject({ code: 0, err: '' });
    const { workflowId } = JSON.parse(started.out) as { workflowId: string };
    const result = await cli(['result', workflowId, '--json']);
    expect(JSON.parse(result.out).messages.slice(1)).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Again' },
      { role: 'assistant', content: 'Answered by works.' },
    ]);
    expect((await cli(['state', workflowId])).out).toMatch(/model switched from gone to works at step \d+: model or endpoint not found/);

    writeFileSync(file, JSON.stringify([{ role: 'bot', content: 'x' }]));
    const bad = await cli(['start', 'p', '--messages-file', file]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('--messages-file (messages.0.role): role must be one of system, user, assistant, tool');
  }, 30_000);
});

describe('through the gateway', () => {
  test('fallbackModels, messages and returnMessages on POST /v1/runs; the state shows the model in use', async () => {
    const prior = [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello.' }];
    const started = await api('POST', '/v1/runs', { prompt: 'Again', model: 'gone', fallbackModels: ['works'], messages: prior, returnMessages: true });
    expect(started.status).toBe(201);
    const id = started.body.workflowId as string;
    const result = await api('GET', `/v1/runs/${id}/result`);
    expect(result.status).toBe(200);
    expect(result.body.messages.slice(1)).toEqual([...prior, { role: 'user', content: 'Again' }, { role: 'assistant', content: 'Answered by works.' }]);
    const state = await api('GET', `/v1/runs/${id}`);
    expect(state.body).toMatchObject({ model: 'works', modelSwitches: [{ from: 'gone', to: 'works' }] });
  }, 30_000);

  test('a bad conversation is a 400 naming the message and the field', async () => {
    const res = await api('POST', '/v1/runs', { prompt: 'p', messages: [{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('messages.1.role: a system message may only come first');
  });
});
