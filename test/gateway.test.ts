/** The HTTP gateway on a real worker and dev server: JSON routes through `inject`, SSE over a real port with `fetch`. */
import http from 'node:http';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify';
import { AgentClient, AgentRunHandle, type WatchEvent } from '../src/client';
import { runInputSchemas } from '../src/common/input';
import type { RunStateView } from '../src/common/messages';
import { buildGateway, openApiDocument } from '../src/gateway/index';
import { bodySchema, viewSchemas } from '../src/gateway/openapi';
import { undocumented } from './support/documented-state';
import { registerRoutes } from '../src/gateway/routes';
import { EventCursor, parseCursor, parseStreamId } from '../src/gateway/sse-cursor';
import { sharedStates } from '../src/gateway/shared-state';
import { streamTokens } from '../src/gateway/stream-token';
import { sleep, startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { readSse } from './support/sse';

const TOKEN = 'gateway-test-token';
let h: AgentHarness;
let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  h = await startAgentHarness();
  app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app?.close();
  await h?.close();
});

afterEach(() => jest.restoreAllMocks());

const auth = { authorization: `Bearer ${TOKEN}` };
const api = async (method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: auth, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
};
const startRun = async (input: object): Promise<string> => {
  const res = await api('POST', '/v1/runs', input);
  expect(res.status).toBe(201);
  return res.body.workflowId;
};
const waitForState = (id: string, predicate: (s: RunStateView) => boolean) =>
  waitFor(async () => {
    const { body } = await api('GET', `/v1/runs/${id}`);
    return predicate(body) ? (body as RunStateView) : undefined;
  }, 20_000, `run ${id} state`);

const events = (id: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${baseUrl}/v1/runs/${encodeURIComponent(id)}/events`, { headers: { ...auth, ...headers }, signal });

test('401 without the right token in one error shape; /healthz and /openapi.json are public', async () => {
  for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }]) {
    const res = await app.inject({ method: 'GET', url: '/v1/runs', headers });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: { code: 'unauthorized', message: expect.stringContaining('bearer token') } });
    expect(res.headers['www-authenticate']).toBe('Bearer');
  }
  expect((await app.inject({ method: 'GET', url: '/v1/nothing' })).statusCode).toBe(401);
  expect((await api('GET', '/v1/nothing')).body.error.code).toBe('route_not_found');
  expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
  expect((await app.inject({ method: 'GET', url: '/openapi.json' })).json()).toMatchObject({ openapi: '3.1.0' });
});

test('OpenAPI: every documented route exists, every route is documented, the start body is the agentRun input schema', async () => {
  const doc = openApiDocument() as { paths: Record<string, Record<string, any>> };
  const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
  );
  for (const route of documented) {
    const [method, url] = route.split(' ');
    expect([route, app.hasRoute({ method: method as 'GET', url })]).toEqual([route, true]);
  }
  const bare = Fastify();
  const registered: string[] = [];
  bare.addHook('onRoute', (r) => {
    for (const m of [r.method].flat()) if (m !== 'HEAD') registered.push(`${m} ${r.url}`);
  });
  registerRoutes(bare, { agents: {} as AgentClient, heartbeatMs: 1, pollIntervalMs: 1, controlTimeoutMs: 1, inflight: new Map(), streamTokens: streamTokens(null, 1), states: sharedStates(1) });
  await bare.ready();
  expect(registered.sort()).toEqual([...documented].sort());
  await bare.close();

  // The body is the workflow's own input schema, `resume` (set by the workflow and fork only) left out.
  const { AgentRunInputSchema } = runInputSchemas();
  const { resume: _resume, ...properties } = (bodySchema(AgentRunInputSchema) as any).properties;
  const start = doc.paths['/v1/runs'].post.requestBody.content['application/json'].schema;
  expect(start).toEqual({ ...bodySchema(AgentRunInputSchema), properties });
  expect(start.required).toEqual(['prompt']);
  expect(doc.paths['/v1/runs/{id}/approvals'].post.requestBody.content['application/json'].schema.required).toEqual(['toolCallId', 'approved']);
  // The state view's schemas are generated from its zod schema (common/view.ts), not written beside it.
  expect((doc as unknown as { components: { schemas: object } }).components.schemas).toMatchObject(viewSchemas());

  // Every event kind the stream sends (WatchEvent's types and the stream's own error), and 415 wherever a body goes.
  const sse = doc.paths['/v1/runs/{id}/events'].get.description as string;
  for (const kind of ['transition', 'text', 'restart', 'approval', 'toolStart', 'toolEnd', 'retry', 'end', 'error']) expect([kind, sse.includes(`\`${kind}\``)]).toEqual([kind, true]);
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) if (op.requestBody) expect([method, path, op.responses['415']]).toEqual([method, path, expect.anything()]);
  }
});

test('start -> state -> result, time travel; 400 names the field; unknown run 404', async () => {
  h.model.register('gw-answer', [{ text: 'the answer' }]);
  const started = await app.inject({ method: 'POST', url: '/v1/runs', headers: auth, payload: { prompt: 'hi', model: 'gw-answer' } });
  expect(started.statusCode).toBe(201);
  const { workflowId, runId } = started.json();
  expect(runId).toEqual(expect.any(String));
  expect(started.headers.location).toBe(`/v1/runs/${workflowId}`);

  expect((await api('GET', `/v1/runs/${workflowId}/result`)).body).toMatchObject({ status: 'COMPLETED', answer: 'the answer' });
  const state = await api('GET', `/v1/runs/${workflowId}`);
  expect(state.body).toMatchObject({ state: 'COMPLETED', answer: 'the answer', messageCount: expect.any(Number) });
  expect(state.body.messages).toBeUndefined();
  expect((await api('GET', `/v1/runs/${workflowId}?messages=1`)).body.messages.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant']);
  expect((await api('GET', `/v1/runs/${workflowId}/steps/1`)).body).toMatchObject({ state: 'STREAMING', step: 1 });
  const missingStep = await api('GET', `/v1/runs/${workflowId}/steps/99`);
  expect([missingStep.status, missingStep.body.error.code]).toEqual([404, 'step_not_found']);

  const bad = await api('POST', '/v1/runs', { prompt: 'hi', limits: { maxLoops: 0 } });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toEqual({ code: 'invalid_input', message: expect.stringContaining('limits.maxLoops') });
  expect((await api('POST', '/v1/runs', { prompt: 'hi', resume: {} })).body.error.message).toContain('resume');
  const outside = await api('POST', '/v1/runs', { prompt: 'x', tools: ['listFiles'], approval: { tools: ['readFile'] } });
  expect([outside.status, outside.body.error.message]).toEqual([400, expect.stringContaining("approval.tools: readFile is not among the run's tools (listFiles)")]);
  expect((await api('GET', '/v1/runs?limit=0')).body.error.message).toContain('limit');

  const unknown = await api('GET', '/v1/runs/no-such-run');
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.code).toBe('run_not_found');
  expect((await api('GET', '/v1/runs/no-such-run/result')).status).toBe(404);
});

test('a failed run: result 422 with the reason; list by state', async () => {
  h.model.register('gw-ok', [{ text: 'fine' }]);
  h.model.register('gw-broken', [{ error: { status: 401, message: 'bad key' } }]);
  const [done, failed] = [await startRun({ prompt: 'a', model: 'gw-ok' }), await startRun({ prompt: 'b', model: 'gw-broken' })];

  const failure = await api('GET', `/v1/runs/${failed}/result`);
  expect(failure.status).toBe(422);
  expect(failure.body.error).toMatchObject({ code: 'run_failed', message: expect.stringContaining('401'), failureType: 'AgentRunFailed' });
  expect((await api('GET', `/v1/runs/${done}/result`)).status).toBe(200);

  const listed = (state: string) =>
    waitFor(async () => {
      const ids = (await api('GET', `/v1/runs?state=${state}&limit=100`)).body.runs.map((r: any) => r.workflowId);
      return ids.includes(state === 'COMPLETED' ? done : failed) ? ids : undefined;
    }, 15_000, `a ${state} run in the list`);
  const completed = await listed('COMPLETED');
  expect(completed).not.toContain(failed);
  expect(await listed('FAILED')).not.toContain(done);
  expect((await api('GET', '/v1/runs?state=NOPE')).body.error.message).toContain('state');
});

test('approval over HTTP: a wrong toolCallId is 409 with the reason, the right one runs the tool', async () => {
  h.model.register('gw-writer', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool')
      ? { text: 'written' }
      : { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'gw.txt', content: 'ok' } }] },
  );
  const id = await startRun({ prompt: 'write', model: 'gw-writer', approval: { tools: ['writeFile'] } });
  const waiting = await waitForState(id, (s) => s.state === 'AWAITING_APPROVAL');
  expect(waiting.pendingApproval.map((p) => p.toolCallId)).toEqual(['w1']);
  expect(undocumented(waiting)).toEqual([]);

  const wrong = await api('POST', `/v1/runs/${id}/approvals`, { toolCallId: 'nope', approved: true });
  expect(wrong.status).toBe(409);
  expect(wrong.body.error).toMatchObject({ code: 'update_rejected', message: expect.stringContaining('nope') });
  expect((await api('POST', `/v1/runs/${id}/approvals`, { toolCallId: 'w1' })).body.error.message).toContain('approved');

  const approved = await api('POST', `/v1/runs/${id}/approvals`, { toolCallId: 'w1', approved: true });
  expect(approved).toMatchObject({ status: 200, body: { toolCallId: 'w1', approved: true, remaining: 0 } });
  expect((await api('GET', `/v1/runs/${id}/result`)).body).toMatchObject({ status: 'COMPLETED', answer: 'written', toolCalls: 1 });
  // Every view the gateway answers matches the OpenAPI document: with the conversation, and at each step.
  const done = (await api('GET', `/v1/runs/${id}?messages=1`)).body;
  expect([done.recentToolCalls.length, undocumented(done)]).toEqual([1, []]);
  for (let step = 1; step <= done.step; step++) expect([step, undocumented((await api('GET', `/v1/runs/${id}/steps/${step}`)).body)]).toEqual([step, []]);
});

test('steering over HTTP: pause, message, abort; an ended run refuses signals with 409', async () => {
  h.model.register('gw-stall', [{ text: 'thinking about it', chunkSize: 4, stallAfterChunks: 1 }]);
  const id = await startRun({ prompt: 'wait', model: 'gw-stall' });
  await waitForState(id, (s) => s.state === 'STREAMING' && s.partialText.length > 0);

  expect(await api('POST', `/v1/runs/${id}/pause`)).toMatchObject({ status: 202, body: { workflowId: id, signal: 'pause', sent: true } });
  await waitForState(id, (s) => s.pauseRequested);
  expect((await api('POST', `/v1/runs/${id}/resume`)).status).toBe(202);
  await waitForState(id, (s) => !s.pauseRequested);
  expect(await api('POST', `/v1/runs/${id}/messages`, { text: 'also this' })).toMatchObject({ status: 200, body: { queued: 1 } });
  expect((await api('POST', `/v1/runs/${id}/messages`, { text: ' ' })).status).toBe(400);

  expect((await api('POST', `/v1/runs/${id}/abort`, { reason: 'enough' })).status).toBe(202);
  expect((await api('GET', `/v1/runs/${id}/result`)).body).toMatchObject({ status: 'ABORTED', reason: expect.stringContaining('enough') });
  const late = await api('POST', `/v1/runs/${id}/abort`);
  expect([late.status, late.body.error.code]).toEqual([409, 'run_ended']);
});

test('SSE: transitions and streamed text before the call ends, then end; Last-Event-ID resumes', async () => {
  const text = 'words that arrive slowly over server-sent events';
  h.model.register('gw-slow', [{ text, chunkSize: 4, chunkDelayMs: 100 }]);
  const id = await startRun({ prompt: 'talk', model: 'gw-slow' });
  const res = await events(id);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const all = await readSse(res);
  const messages = all.filter((m) => m.event);

  expect(messages.at(-1)).toMatchObject({ event: 'end', data: { type: 'end', state: { state: 'COMPLETED', answer: text } } });
  expect(messages.every((m) => parseStreamId(m.id) !== undefined)).toBe(true);
  const kinds = messages.map((m) => (m.event === 'transition' ? `to:${m.data.transition.to}` : m.event));
  const firstText = kinds.indexOf('text');
  expect(firstText).toBeGreaterThan(kinds.indexOf('to:STREAMING'));
  expect(firstText).toBeLessThan(kinds.indexOf('to:PROCESSING'));
  const texts = messages.filter((m) => m.event === 'text');
  expect(texts.length).toBeGreaterThan(1);
  expect(texts.map((m) => m.data.text).join('')).toBe(text);
  const steps = messages.filter((m) => m.event === 'transition').map((m) => m.data.step);
  expect(steps).toEqual(messages.at(-1)!.data.state.transitions.map((_: unknown, i: number) => i + 1));
  expect(all.some((m) => m.comment === 'heartbeat')).toBe(true);

  // Reconnecting after the first text event: the rest of the text, the later transitions, then end.
  const resumeAt = texts[0];
  const again = (await readSse(await events(id, { 'last-event-id': resumeAt.id! }))).filter((m) => m.event);
  expect(again.filter((m) => m.event === 'transition').map((m) => m.data.step)).toEqual(steps.filter((s) => s > parseStreamId(resumeAt.id)!.cursor.step));
  expect(resumeAt.data.text + again.filter((m) => m.event === 'text').map((m) => m.data.text).join('')).toBe(text);
  expect(again.at(-1)?.event).toBe('end');
  // From the last id: nothing new but the end.
  expect((await readSse(await events(id, { 'last-event-id': messages.at(-1)!.id! }))).filter((m) => m.event).map((m) => m.event)).toEqual(['end']);
});

test('SSE: tool calls arrive as toolStart and toolEnd, in order between the transitions that started and ended them', async () => {
  h.model.register('gw-tools', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'r1', name: 'readFile', arguments: { path: 'hello.txt' } }] } : { text: 'read it' },
  );
  const id = await startRun({ prompt: 'read', model: 'gw-tools' });
  const messages = (await readSse(await events(id))).filter((m) => m.event);
  const kinds = messages.map((m) => (m.event === 'transition' ? `to:${m.data.transition.to}` : m.event));
  expect(kinds.slice(kinds.indexOf('to:TOOL_EXECUTING'), kinds.indexOf('to:TOOL_EXECUTING') + 4)).toEqual(['to:TOOL_EXECUTING', 'toolStart', 'toolEnd', 'to:CRITIQUE']);
  const start = messages.find((m) => m.event === 'toolStart')!.data;
  const end = messages.find((m) => m.event === 'toolEnd')!.data;
  expect(start).toMatchObject({ toolCallId: 'r1', name: 'readFile', arguments: '{"path":"hello.txt"}' });
  expect(end).toMatchObject({ toolCallId: 'r1', name: 'readFile', ok: true, output: expect.stringMatching(/^Hello from the workspace/) });
  expect(end.durationMs).toBeGreaterThanOrEqual(0);
});

test('SSE: an unknown run is a JSON 404; a client that goes away stops the watch loop', async () => {
  const missing = await events('no-such-run');
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({ error: { code: 'run_not_found' } });

  h.model.register('gw-hang', [{ text: 'never finishing', chunkSize: 4, stallAfterChunks: 1 }]);
  const id = await startRun({ prompt: 'hang', model: 'gw-hang' });
  await waitForState(id, (s) => s.partialText.length > 0);
  const polls = jest.spyOn(AgentRunHandle.prototype, 'state');
  const client = new AbortController();
  let sawText = false;
  await readSse(await events(id, {}, client.signal), (m) => (sawText ||= m.event === 'text') && m.comment === 'heartbeat');
  client.abort();
  await sleep(300);
  const afterClose = polls.mock.calls.length;
  expect(afterClose).toBeGreaterThan(0);
  await sleep(500); // five poll intervals
  expect(polls.mock.calls.length).toBe(afterClose);
  await api('POST', `/v1/runs/${id}/abort`);
});

test('the SSE cursor drops what a reconnecting client saw and tells it about a retried attempt', () => {
  const view = { step: 1, transitions: [{ from: 'IDLE', to: 'STREAMING', event: 'START', at: 't' }] } as unknown as RunStateView;
  const text = (t: string, attempt = 1): WatchEvent => ({ type: 'text', text: t, callNumber: 1, attempt });
  const run = (cursor: EventCursor, watched: WatchEvent[]) => {
    cursor.observe(view);
    return watched.flatMap((e) => cursor.next(e)).map((e) => [e.type, e.id, (e.data as any).text]);
  };
  const transition: WatchEvent = { type: 'transition', transition: view.transitions[0] };

  expect(run(new EventCursor(), [transition, text('Hello'), text(' you')])).toEqual([
    ['transition', '0-0_1.0.0.0', undefined],
    ['text', '0-0_1.1.1.5', 'Hello'],
    ['text', '0-0_1.1.1.9', ' you'],
  ]);
  expect(run(new EventCursor(parseCursor('1.1.1.3'), '5-7'), [transition, text('Hello you')])).toEqual([['text', '5-7_1.1.1.9', 'lo you']]);
  expect(run(new EventCursor(parseCursor('1.1.1.3')), [transition, text('Hi', 2)])).toEqual([
    ['restart', '0-0_1.1.2.0', undefined],
    ['text', '0-0_1.1.2.2', 'Hi'],
  ]);
  expect(parseStreamId('5-7_1.1.1.3')).toEqual({ offset: '5-7', cursor: { step: 1, callNumber: 1, attempt: 1, chars: 3 } });
  expect(parseStreamId('5-7')).toBeUndefined();
  expect(parseCursor('garbage')).toBeUndefined();
});

test('a non-JSON body is 415 with the content type named, not a 400 from the schema check', async () => {
  for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded']) {
    const res = await app.inject({ method: 'POST', url: '/v1/runs', headers: { ...auth, 'content-type': type }, payload: '{"prompt":"hi"}' });
    expect([res.statusCode, res.json()]).toEqual([415, { error: { code: 'unsupported_media_type', message: expect.stringContaining(`Content-Type: ${type}`) } }]);
    expect(res.json().error.message).toContain('application/json');
  }
});

test('CORS, off by default: only the listed origins get preflights answered and the headers on answers and streams', async () => {
  h.model.register('gw-cors', [{ text: 'cross-origin' }]);
  const id = await startRun({ prompt: 'hi', model: 'gw-cors' });
  const spa = 'http://spa.example:5173';
  const preflight = (url: string, origin: string) =>
    fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });

  // The gateway built without corsOrigins sends no CORS header: a browser keeps other origins out.
  const closed = await preflight(`${baseUrl}/v1/runs`, spa);
  expect(closed.headers.get('access-control-allow-origin')).toBeNull();
  expect((await fetch(`${baseUrl}/v1/runs`, { headers: { ...auth, origin: spa } })).headers.get('access-control-allow-origin')).toBeNull();

  const open = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, corsOrigins: [spa], pollIntervalMs: 100 });
  await open.listen({ port: 0, host: '127.0.0.1' });
  const openUrl = `http://127.0.0.1:${(open.server.address() as AddressInfo).port}`;
  try {
    // The preflight carries no token and is answered before authentication.
    const ok = await preflight(`${openUrl}/v1/runs`, spa);
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe(spa);
    expect(ok.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    expect(ok.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect((await preflight(`${openUrl}/v1/runs`, 'http://elsewhere.example')).headers.get('access-control-allow-origin')).toBeNull();

    const state = await fetch(`${openUrl}/v1/runs/${id}`, { headers: { ...auth, origin: spa } });
    expect([state.status, state.headers.get('access-control-allow-origin')]).toEqual([200, spa]);
    // An error is readable cross-origin too, so the page can show why.
    const refused = await fetch(`${openUrl}/v1/runs/${id}`, { headers: { origin: spa } });
    expect([refused.status, refused.headers.get('access-control-allow-origin')]).toEqual([401, spa]);
    // The event stream writes its own head: the CORS headers must be in it.
    const stream = await fetch(`${openUrl}/v1/runs/${id}/events`, { headers: { ...auth, origin: spa } });
    expect([stream.status, stream.headers.get('access-control-allow-origin')]).toEqual([200, spa]);
    expect((await readSse(stream)).filter((m) => m.event).at(-1)?.event).toBe('end');
  } finally {
    await open.close();
  }
});

test('stream tokens: one run, a few minutes, accepted as ?token= on that run\'s events only; expired, other-run and tampered ones are 401 with the reason', async () => {
  h.model.register('gw-token', () => ({ text: 'streamed to a browser' }));
  const [id, other] = [await startRun({ prompt: 'a', model: 'gw-token' }), await startRun({ prompt: 'b', model: 'gw-token' })];
  const issued = await fetch(`${baseUrl}/v1/runs/${id}/stream-token`, { method: 'POST', headers: auth });
  expect(issued.status).toBe(201);
  const { token, expiresAt, workflowId } = (await issued.json()) as { token: string; expiresAt: string; workflowId: string };
  expect(workflowId).toBe(id);
  expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(4 * 60_000);
  expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(5 * 60_000);
  expect((await fetch(`${baseUrl}/v1/runs/${id}/stream-token`, { method: 'POST' })).status).toBe(401);
  const unknown = await fetch(`${baseUrl}/v1/runs/no-such-run/stream-token`, { method: 'POST', headers: auth });
  expect([unknown.status, ((await unknown.json()) as any).error.code]).toEqual([404, 'run_not_found']);

  const stream = (run: string, t: string, extra = '') => fetch(`${baseUrl}/v1/runs/${encodeURIComponent(run)}/events?token=${encodeURIComponent(t)}${extra}`);
  const valid = await stream(id, token);
  expect(valid.status).toBe(200);
  const messages = (await readSse(valid)).filter((m) => m.event);
  expect(messages.at(-1)).toMatchObject({ event: 'end', data: { state: { answer: 'streamed to a browser' } } });
  // A new EventSource cannot send Last-Event-ID: ?lastEventId= resumes the same way.
  expect((await readSse(await stream(id, token, `&lastEventId=${messages.at(-1)!.id}`))).filter((m) => m.event).map((m) => m.event)).toEqual(['end']);

  const refused = async (res: Response, message: RegExp) => {
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message: expect.stringMatching(message) } });
  };
  await refused(await stream(other, token), new RegExp(`for run ${id}, not ${other}`));
  const [payload, signature] = token.split('.');
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), run: other })).toString('base64url');
  await refused(await stream(other, `${forged}.${signature}`), /signature does not match/);
  await refused(await stream(id, `${payload}.${signature.slice(0, -2)}AA`), /signature does not match/);
  await refused(await stream(id, 'not-a-token'), /malformed/);
  await refused(await fetch(`${baseUrl}/v1/runs/${id}?token=${token}`), /only by GET \/v1\/runs\/:id\/events/);

  // Another gateway token signs with another key; a short lifetime expires.
  const brief = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: `${TOKEN}-rotated`, streamTokenTtlMs: 50 });
  try {
    await refused(toResponse(await brief.inject({ method: 'GET', url: `/v1/runs/${id}/events?token=${token}` })), /signature does not match/);
    const short = (await brief.inject({ method: 'POST', url: `/v1/runs/${id}/stream-token`, headers: { authorization: `Bearer ${TOKEN}-rotated` } })).json().token;
    await sleep(100);
    await refused(toResponse(await brief.inject({ method: 'GET', url: `/v1/runs/${id}/events?token=${short}` })), /expired at .*POST \/v1\/runs\/:id\/stream-token/);
  } finally {
    await brief.close();
  }
});

const toResponse = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) =>
  new Response(res.body, { status: res.statusCode, headers: Object.entries(res.headers).map(([k, v]) => [k, String(v)]) });

test('closing the gateway ends open streams and every connection: one a client keeps alive for reuse, one on which no request came yet', async () => {
  h.model.register('gw-close', () => ({ toolCalls: [{ id: 'c1', name: 'writeFile', arguments: { path: 'close.txt', content: 'x' } }] }));
  const id = await startRun({ prompt: 'write', model: 'gw-close', approval: { tools: ['writeFile'] } });
  await waitForState(id, (s) => s.state === 'AWAITING_APPROVAL');
  const closing = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, pollIntervalMs: 100 });
  await closing.listen({ port: 0, host: '127.0.0.1' });
  const port = (closing.server.address() as AddressInfo).port;
  // Node's agent keeps an idle connection until the server ends it, as a browser does (for minutes).
  const agent = new http.Agent({ keepAlive: true });
  // A browser opens connections before it has requests for them (preconnect).
  const preconnected = net.connect(port, '127.0.0.1');
  await once(preconnected, 'connect');
  try {
    const stream = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get({ agent, host: '127.0.0.1', port, path: `/v1/runs/${id}/events`, headers: auth }, resolve).on('error', reject),
    );
    stream.resume();
    await once(stream, 'data');
    const closed = [once(stream.socket, 'close'), once(preconnected, 'close')];
    // Without ending them, the close waited for the clients to drop these connections, or 72 s (keepAliveTimeout).
    await closing.close();
    await Promise.all(closed);
    expect(stream.complete).toBe(true);
  } finally {
    preconnected.destroy();
    agent.destroy();
    await closing.close();
    await api('POST', `/v1/runs/${id}/abort`, { reason: 'test over' });
  }
});
