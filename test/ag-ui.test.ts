/**
 * `GET /v1/runs/:id/ag-ui` read by AG-UI's own client (`@ag-ui/client`: HttpAgent, which parses the SSE, enforces
 * the schemas, runs the protocol verifier and applies the events to its messages and state), every event also
 * checked against `@ag-ui/core`'s zod schemas, against a real run on a real worker publishing to the gateway's
 * stream channel.
 */
import type { FastifyInstance } from 'fastify';
import { HttpAgent, type BaseEvent, type RunAgentInput } from '@ag-ui/client';
import type { Event } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import type { AgUiEvent } from '../src/gateway/ag-ui';
import type { AgentHarness } from './support/agent-harness';
import { startStreamingGateway, type StreamingGateway } from './support/streaming-gateway';
import { readSse } from './support/sse';

// Compile-time: every event the gateway sends is one of AG-UI's own event types (`tsc` fails otherwise). Their
// `type` is an enum whose values are the strings on the wire.
type OnTheWire<E> = E extends { type: infer T extends string } ? Omit<E, 'type'> & { type: `${T}` } : never;
const fitsTheProtocol: AgUiEvent extends OnTheWire<Event> ? true : never = true;
void fitsTheProtocol;

const TOKEN = 'ag-ui-token';
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

/** HttpAgent as shipped, reading a run's AG-UI stream with a GET (the gateway starts runs with its own POST /v1/runs). */
class RunStreamAgent extends HttpAgent {
  constructor(runId: string, private readonly extra: Record<string, string> = {}) {
    super({ url: `${baseUrl}/v1/runs/${encodeURIComponent(runId)}/ag-ui`, threadId: runId });
  }
  protected override requestInit(_input: RunAgentInput): RequestInit {
    return { method: 'GET', headers: { ...auth, ...this.extra, accept: 'text/event-stream' }, signal: this.abortController.signal };
  }
}

interface Read {
  events: BaseEvent[];
  agent: RunStreamAgent;
  error?: string;
}

/** The run as AG-UI's client reads it; every event also parsed by the protocol's zod schemas. */
async function readWithAgUi(runId: string, headers: Record<string, string> = {}): Promise<Read> {
  const agent = new RunStreamAgent(runId, headers);
  const events: BaseEvent[] = [];
  let error: string | undefined;
  try {
    await agent.runAgent({}, {
      onEvent: ({ event }) => {
        const parsed = EventSchemas.safeParse(event);
        if (!parsed.success) throw new Error(`${event.type} does not fit AG-UI's schema: ${parsed.error.message}`);
        events.push(event);
      },
    });
  } catch (err) {
    // With the events before it, so that a verifier complaint can be read against the sequence.
    error = `${String(err)}\nafter: ${types(events).join(' ')}`;
  }
  return { events, agent, error };
}

const startRun = async (input: object): Promise<string> => {
  const res = await app.inject({ method: 'POST', url: '/v1/runs', headers: auth, payload: input });
  expect(res.statusCode).toBe(201);
  return res.json().workflowId;
};

const types = (events: BaseEvent[]): string[] => events.map((e) => e.type);
const textOf = (events: BaseEvent[]) => events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta as string).join('');

test('text, a tool call and the end: messages, steps, state and RUN_FINISHED as AG-UI verifies them', async () => {
  h.model.register('agui-tool', [
    { text: 'Let me look. ', chunkSize: 4, chunkDelayMs: 10, toolCalls: [{ id: 'r1', name: 'readFile', arguments: { path: 'hello.txt' } }] },
    { text: 'It says hello.', chunkSize: 4, chunkDelayMs: 10 },
  ]);
  const id = await startRun({ prompt: 'read hello.txt', model: 'agui-tool' });
  const { events, agent, error } = await readWithAgUi(id);
  expect(error).toBeUndefined();

  expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: id, runId: id });
  expect(events[1]).toMatchObject({ type: 'STATE_SNAPSHOT' });
  expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', threadId: id, runId: id, result: 'It says hello.', outcome: { type: 'success' } });
  expect(textOf(events)).toBe('Let me look. It says hello.');
  const t = types(events);
  expect(t.indexOf('TOOL_CALL_START')).toBeGreaterThan(t.indexOf('TEXT_MESSAGE_END'));
  expect(events.find((e) => e.type === 'TOOL_CALL_START')).toMatchObject({ toolCallId: 'r1', toolCallName: 'readFile' });
  expect(events.find((e) => e.type === 'TOOL_CALL_ARGS')).toMatchObject({ toolCallId: 'r1', delta: JSON.stringify({ path: 'hello.txt' }) });
  expect(String(events.find((e) => e.type === 'TOOL_CALL_RESULT')?.content)).toContain('Hello from the workspace');
  expect(events.filter((e) => e.type === 'STEP_STARTED').map((e) => e.stepName)).toEqual(expect.arrayContaining(['STREAMING', 'TOOL_EXECUTING']));

  // What the client built from them: two assistant messages and the tool's result, and the final state.
  const messages = agent.messages as Array<{ role: string; content?: unknown; toolCalls?: Array<{ id: string; function: { name: string; arguments: string } }> }>;
  expect(messages.filter((m) => m.role === 'assistant' && m.content).map((m) => m.content)).toEqual(['Let me look. ', 'It says hello.']);
  expect(messages.flatMap((m) => m.toolCalls ?? [])).toEqual([expect.objectContaining({ id: 'r1', function: { name: 'readFile', arguments: '{"path":"hello.txt"}' } })]);
  expect(messages.find((m) => m.role === 'tool')).toMatchObject({ toolCallId: 'r1' });
  expect(agent.state).toMatchObject({ state: 'COMPLETED', answer: 'It says hello.' });
});

test('a tool call that waits for approval: the call, then CUSTOM approval, then its result once approved', async () => {
  h.model.register('agui-writer', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool') ? { text: 'written' } : { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'agui.txt', content: 'ok' } }] },
  );
  const id = await startRun({ prompt: 'write', model: 'agui-writer', approval: { tools: ['writeFile'] } });
  const reading = readWithAgUi(id);
  await h.waitForState(h.env.client.workflow.getHandle(id), (s) => s.state === 'AWAITING_APPROVAL');
  expect((await app.inject({ method: 'POST', url: `/v1/runs/${id}/approvals`, headers: auth, payload: { toolCallId: 'w1', approved: true } })).statusCode).toBe(200);

  const { events, error } = await reading;
  expect(error).toBeUndefined();
  const t = types(events);
  const approval = events.findIndex((e) => e.type === 'CUSTOM' && e.name === 'approval');
  expect(events[approval]).toMatchObject({ value: { pending: [expect.objectContaining({ toolCallId: 'w1', name: 'writeFile' })] } });
  expect(approval).toBeGreaterThan(t.indexOf('TOOL_CALL_END'));
  expect(t.indexOf('TOOL_CALL_RESULT')).toBeGreaterThan(approval);
  expect(t.filter((x) => x === 'TOOL_CALL_START')).toHaveLength(1);
  expect(events.find((e) => e.type === 'STEP_STARTED' && e.stepName === 'AWAITING_APPROVAL')).toBeDefined();
  expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' }, result: 'written' });
});

test('an aborted run ends with RUN_FINISHED, outcome cancelled', async () => {
  h.model.register('agui-slow', [{ text: Array.from({ length: 200 }, (_, i) => `w${i} `).join(''), chunkSize: 3, chunkDelayMs: 30 }]);
  const id = await startRun({ prompt: 'talk', model: 'agui-slow' });
  const reading = readWithAgUi(id);
  await h.waitForState(h.env.client.workflow.getHandle(id), (s) => s.partialText.length > 20);
  expect((await app.inject({ method: 'POST', url: `/v1/runs/${id}/abort`, headers: auth, payload: { reason: 'enough' } })).statusCode).toBe(202);
  const { events, error } = await reading;
  expect(error).toBeUndefined();
  expect(textOf(events).length).toBeGreaterThan(20);
  expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
});

test('a reconnect with Last-Event-ID continues the text message with nothing repeated, and verifies on its own', async () => {
  const answer = Array.from({ length: 40 }, (_, i) => `r${i} `).join('');
  h.model.register('agui-resume', [{ text: answer, chunkSize: 3, chunkDelayMs: 20 }]);
  const id = await startRun({ prompt: 'talk', model: 'agui-resume' });

  // The first connection is cut after some text; its last id is where the client resumes.
  let seen = '';
  let lastId: string | undefined;
  let textBeforeId = '';
  await readSse(await fetch(`${baseUrl}/v1/runs/${id}/ag-ui`, { headers: auth }), (m) => {
    if (m.data?.type === 'TEXT_MESSAGE_CONTENT') seen += m.data.delta;
    if (m.id) [lastId, textBeforeId] = [m.id, seen];
    return seen.length >= 30;
  });
  expect(lastId).toMatch(/^\d+-\d+_\d+\.\d+\.\d+\.\d+$/);

  const resumed = await readWithAgUi(id, { 'last-event-id': lastId! });
  expect(resumed.error).toBeUndefined();
  expect(textBeforeId + textOf(resumed.events)).toBe(answer);
  expect(types(resumed.events).slice(0, 3)).toEqual(['RUN_STARTED', 'STATE_SNAPSHOT', 'TEXT_MESSAGE_START']);
  expect(resumed.events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
});

test('a rejected tool call gets its TOOL_CALL_RESULT: the rejection, as the model is told', async () => {
  h.model.register('agui-rejected', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool') ? { text: 'not written' } : { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'agui.txt', content: 'no' } }] },
  );
  const id = await startRun({ prompt: 'write', model: 'agui-rejected', approval: { tools: ['writeFile'] } });
  const reading = readWithAgUi(id);
  await h.waitForState(h.env.client.workflow.getHandle(id), (s) => s.state === 'AWAITING_APPROVAL');
  const decided = await app.inject({ method: 'POST', url: `/v1/runs/${id}/approvals`, headers: auth, payload: { toolCallId: 'w1', approved: false, feedback: 'no' } });
  expect(decided.statusCode).toBe(200);

  const { events, error } = await reading;
  expect(error).toBeUndefined();
  const t = types(events);
  const result = events.find((e) => e.type === 'TOOL_CALL_RESULT');
  expect(result).toMatchObject({ toolCallId: 'w1', role: 'tool', content: expect.stringContaining('The user rejected this call') });
  expect(t.indexOf('TOOL_CALL_RESULT')).toBeGreaterThan(events.findIndex((e) => e.type === 'CUSTOM' && e.name === 'approval'));
  expect(t.filter((x) => x === 'TOOL_CALL_START')).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' }, result: 'not written' });
});
