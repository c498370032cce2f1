/**
 * `GET /v1/runs/:id/ui-message-stream` read by the Vercel AI SDK's own client (`ai`: DefaultChatTransport.reconnectToStream
 * and readUIMessageStream, in a child process because the package is ESM only), against a real run on a real worker
 * publishing to the gateway's stream channel.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { UIMessageChunk } from 'ai';
import type { Chunk } from '../src/gateway/ui-message-stream';
import type { AgentHarness } from './support/agent-harness';
import { startStreamingGateway, type StreamingGateway } from './support/streaming-gateway';

// Compile-time: every chunk the gateway sends is one of the AI SDK's own chunk types (`tsc` fails otherwise).
const fitsTheProtocol: Chunk extends UIMessageChunk ? true : never = true;
void fitsTheProtocol;

const TOKEN = 'ui-stream-token';
const auth = { authorization: `Bearer ${TOKEN}` };
let h: AgentHarness;
let app: FastifyInstance;
let baseUrl: string;

let gw: StreamingGateway | undefined;

beforeAll(async () => {
  gw = await startStreamingGateway(TOKEN);
  ({ h, app, baseUrl } = gw);
});
afterAll(async () => {
  await gw?.close();
});

interface AiSdkResult {
  message?: { id: string; role: string; parts: any[] };
  chunks: Array<{ type: string; [k: string]: unknown }>;
  error?: string;
}

/** The run as the AI SDK's client reads it. */
const readWithAiSdk = (runId: string, headers: Record<string, string> = {}) =>
  new Promise<AiSdkResult>((resolve, reject) => {
    const arg = JSON.stringify({ baseUrl, runId, headers: { ...auth, ...headers } });
    execFile(process.execPath, [path.join(__dirname, 'support/ai-sdk-client.mjs'), arg], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    );
  });

const startRun = async (input: object): Promise<string> => {
  const res = await app.inject({ method: 'POST', url: '/v1/runs', headers: auth, payload: input });
  expect(res.statusCode).toBe(201);
  return res.json().workflowId;
};

const textOf = (parts: any[]) => parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test('a run that streams text, calls a tool and completes is one assistant message: text, then the tool with input and output, then text', async () => {
  h.model.register('ui-tool', [
    { text: 'Let me look. ', chunkSize: 4, chunkDelayMs: 10, toolCalls: [{ id: 'r1', name: 'readFile', arguments: { path: 'hello.txt' } }] },
    { text: 'It says hello.', chunkSize: 4, chunkDelayMs: 10 },
  ]);
  const id = await startRun({ prompt: 'read hello.txt', model: 'ui-tool' });
  const res = await fetch(`${baseUrl}/v1/runs/${id}/ui-message-stream`, { headers: auth });
  expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
  await res.body!.cancel();

  const { message, chunks, error } = await readWithAiSdk(id);
  expect(error).toBeUndefined();
  expect(message).toMatchObject({ id, role: 'assistant' });
  const parts = message!.parts.filter((p) => p.type !== 'step-start');
  expect(parts.map((p) => p.type)).toEqual(['text', 'dynamic-tool', 'text']);
  expect(parts[0]).toMatchObject({ text: 'Let me look. ', state: 'done' });
  expect(parts[1]).toMatchObject({ toolCallId: 'r1', toolName: 'readFile', state: 'output-available', input: { path: 'hello.txt' } });
  expect(String(parts[1].output)).toContain('Hello from the workspace');
  expect(parts[2]).toMatchObject({ text: 'It says hello.', state: 'done' });
  expect(chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
});

test('an aborted run ends with abort', async () => {
  h.model.register('ui-slow', [{ text: Array.from({ length: 200 }, (_, i) => `w${i} `).join(''), chunkSize: 3, chunkDelayMs: 30 }]);
  const id = await startRun({ prompt: 'talk', model: 'ui-slow' });
  const reading = readWithAiSdk(id);
  await h.waitForState(h.env.client.workflow.getHandle(id), (s) => s.partialText.length > 20);
  expect((await app.inject({ method: 'POST', url: `/v1/runs/${id}/abort`, headers: auth, payload: { reason: 'enough' } })).statusCode).toBe(202);
  const { message, chunks, error } = await readWithAiSdk(id);
  const live = await reading;
  for (const r of [live, { message, chunks, error }]) {
    expect(r.error).toBeUndefined();
    expect(r.chunks.at(-1)).toMatchObject({ type: 'abort', reason: expect.stringContaining('enough') });
    expect(r.chunks.some((c) => c.type === 'finish')).toBe(false);
    expect(textOf(r.message!.parts).length).toBeGreaterThan(20);
  }
});

test('a reconnect with Last-Event-ID (an offset) continues the text with nothing repeated', async () => {
  const answer = Array.from({ length: 40 }, (_, i) => `r${i} `).join('');
  h.model.register('ui-resume', [{ text: answer, chunkSize: 3, chunkDelayMs: 20 }]);
  const id = await startRun({ prompt: 'talk', model: 'ui-resume' });

  // The first connection is cut after some text; its last id is where the AI SDK client resumes.
  const res = await fetch(`${baseUrl}/v1/runs/${id}/ui-message-stream`, { headers: auth });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let seen = '';
  let lastId: string | undefined;
  let textBeforeId = '';
  while (seen.length < 30) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended early');
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = /^data: (.*)$/m.exec(block)?.[1];
      const chunk = data && data !== '[DONE]' ? JSON.parse(data) : undefined;
      if (chunk?.type === 'text-delta') seen += chunk.delta;
      const eventId = /^id: (.*)$/m.exec(block)?.[1];
      if (eventId) [lastId, textBeforeId] = [eventId, seen];
    }
  }
  await reader.cancel();
  expect(lastId).toMatch(/^\d+-\d+_\d+\.\d+\.\d+\.\d+$/);

  const resumed = await readWithAiSdk(id, { 'last-event-id': lastId! });
  expect(resumed.error).toBeUndefined();
  expect(textBeforeId + textOf(resumed.message!.parts)).toBe(answer);
  expect(resumed.chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'stop' });
});

test('a tool call that waits for approval is a tool part with an approval request, then its output once approved', async () => {
  h.model.register('ui-writer', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool') ? { text: 'written' } : { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'ui.txt', content: 'ok' } }] },
  );
  const id = await startRun({ prompt: 'write', model: 'ui-writer', approval: { tools: ['writeFile'] } });
  const reading = readWithAiSdk(id);
  await h.waitForState(h.env.client.workflow.getHandle(id), (s) => s.state === 'AWAITING_APPROVAL');
  expect((await app.inject({ method: 'POST', url: `/v1/runs/${id}/approvals`, headers: auth, payload: { toolCallId: 'w1', approved: true } })).statusCode).toBe(200);

  const { message, chunks, error } = await reading;
  expect(error).toBeUndefined();
  const types = chunks.map((c) => c.type);
  expect(types.indexOf('tool-approval-request')).toBeGreaterThan(types.indexOf('tool-input-available'));
  expect(types.indexOf('tool-output-available')).toBeGreaterThan(types.indexOf('tool-approval-request'));
  const tool = message!.parts.find((p) => p.type === 'dynamic-tool');
  expect(tool).toMatchObject({ toolCallId: 'w1', toolName: 'writeFile', input: { path: 'ui.txt', content: 'ok' }, state: 'output-available', approval: { id: 'w1' } });
  expect(textOf(message!.parts)).toBe('written');
});

test('a rejected tool call ends its tool part as output-denied, not approval-requested', async () => {
  h.model.register('ui-rejected', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool') ? { text: 'not written' } : { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'ui.txt', content: 'no' } }] },
  );
  const id = await startRun({ prompt: 'write', model: 'ui-rejected', approval: { tools: ['writeFile'] } });
  const reading = readWithAiSdk(id);
  await h.waitForState(h.env.client.workflow.getHandle(id), (s) => s.state === 'AWAITING_APPROVAL');
  const decided = await app.inject({ method: 'POST', url: `/v1/runs/${id}/approvals`, headers: auth, payload: { toolCallId: 'w1', approved: false, feedback: 'no' } });
  expect(decided.statusCode).toBe(200);

  const { message, chunks, error } = await reading;
  expect(error).toBeUndefined();
  const types = chunks.map((c) => c.type);
  expect(chunks).toContainEqual({ type: 'tool-output-denied', toolCallId: 'w1' });
  expect(types.indexOf('tool-output-denied')).toBeGreaterThan(types.indexOf('tool-approval-request'));
  const tool = message!.parts.find((p) => p.type === 'dynamic-tool');
  expect(tool).toMatchObject({ toolCallId: 'w1', toolName: 'writeFile', input: { path: 'ui.txt', content: 'no' }, state: 'output-denied' });
  expect(textOf(message!.parts)).toBe('not written');
});
