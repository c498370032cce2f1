/**
 * What the gateway takes and says, on a real worker and dev server: unknown query parameters refused by name, the OpenAPI
 * document listing exactly what each route takes, the body limit stated, statuses named for what they are.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { AgentClient } from '../src/client';
import { buildGateway, openApiDocument } from '../src/gateway/index';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

const TOKEN = 'gateway-params-token';
let h: AgentHarness;
let app: FastifyInstance;

beforeAll(async () => {
  h = await startAgentHarness();
  app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, pollIntervalMs: 100, controlTimeoutMs: 2_000 });
  await app.ready();
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const api = async (method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: auth, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};

type Operation = { parameters?: Array<{ name: string; in: string; required?: boolean; schema: Record<string, unknown> }>; responses: Record<string, unknown> };
const doc = openApiDocument() as { paths: Record<string, Record<string, Operation>> };
const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase() as 'GET' | 'POST', path, url: path.replace('{id}', 'no-such-run').replace('{step}', '1'), op })),
);
const queryOf = (op: Operation) => (op.parameters ?? []).filter((p) => p.in === 'query');

describe('query parameters: what the document lists is what the gateway takes', () => {
  test('a misspelt parameter is refused with 400 naming it and what the route takes, not ignored', async () => {
    const res = await api('GET', '/v1/runs?statee=PAUSED');
    expect(res).toEqual({
      status: 400,
      body: { error: { code: 'invalid_input', message: 'Invalid query: unknown parameter "statee" for GET /v1/runs (it takes state, limit, q, agent, since, until, parent, forkOf, schedule)' } },
    });
    // Every route, those that take no query too (before they look the run up), and each documents the 400.
    for (const { method, path, url, op } of operations) {
      if (!path.startsWith('/v1/')) continue;
      expect([method, path, op.responses['400']]).toEqual([method, path, expect.anything()]);
      const refused = await api(method, `${url}?bogus=1`);
      expect([method, path, refused.status, refused.body.error?.message]).toEqual([method, path, 400, expect.stringContaining('unknown parameter "bogus"')]);
    }
  });

  test('every parameter the document lists is taken (none refused as unknown), and the stream routes list from=now and token', async () => {
    const value = (p: { name: string; schema: Record<string, unknown> }) =>
      p.name === 'from' && (p.schema.enum as string[] | undefined)?.includes('now') ? 'now' : (p.schema.enum as string[] | undefined)?.[0] ?? (p.schema.type === 'integer' ? '1' : p.schema.format === 'date-time' ? '2026-01-01T00:00:00Z' : 'x');
    for (const { method, path, url, op } of operations) {
      const params = queryOf(op);
      if (!params.length) continue;
      const query = new URLSearchParams(params.filter((p) => p.name !== 'token').map((p): [string, string] => [p.name, value(p)]));
      const res = await api(method, `${url}?${query}`);
      expect([method, path, res.body?.error?.message ?? '']).toEqual([method, path, expect.not.stringContaining('unknown parameter')]);
    }
    const events = queryOf(doc.paths['/v1/runs/{id}/events'].get);
    expect(events.map((p) => p.name).sort()).toEqual(['from', 'lastEventId', 'token']);
    expect(events.find((p) => p.name === 'from')?.schema).toEqual({ type: 'string', enum: ['start', 'now'] });
    expect(queryOf(doc.paths['/v1/runs'].get).map((p) => p.name)).toEqual(['state', 'limit', 'q', 'agent', 'since', 'until', 'parent', 'forkOf', 'schedule']);
  });
});

describe('bodies: the limit stated, and every POST documents 413 and 415', () => {
  test('a start request over 1 MiB is 413 saying the limit', async () => {
    const res = await api('POST', '/v1/runs', { prompt: 'x'.repeat(1_100_000) });
    expect(res).toEqual({
      status: 413,
      body: { error: { code: 'payload_too_large', message: "the body is larger than the gateway's limit of 1 MiB (1,048,576 bytes)", limitBytes: 1_048_576 } },
    });
    const pause = await app.inject({ method: 'POST', url: '/v1/runs/no-such-run/pause', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'now' });
    expect(pause.statusCode).toBe(415);
    for (const { method, path, op } of operations) {
      if (method === 'POST') expect([path, Object.keys(op.responses)]).toEqual([path, expect.arrayContaining(['413', '415'])]);
    }
  });
});

describe('time travel: a missing or wrong step is named, never NaN', () => {
  test('diff without a step, with a word, and a step path that is not a number', async () => {
    // Either end of a diff may be left out (from: step 0, to: the run's step now): the query is valid, the run unknown.
    const open = await api('GET', '/v1/runs/no-such-run/diff?to=2');
    expect([open.status, open.body.error.code]).toEqual([404, 'run_not_found']);
    for (const [url, message] of [
      ['/v1/runs/no-such-run/diff?from=one&to=2', 'Invalid query: from: must be a step number'],
      ['/v1/runs/no-such-run/steps/last', 'Invalid path: step: must be a step number'],
    ]) {
      const res = await api('GET', url);
      expect([url, res.status, res.body.error.message]).toEqual([url, 400, expect.stringContaining(message)]);
      expect(res.body.error.message).not.toContain('NaN');
    }
  });
});

describe("statuses named for what they are: the run's state and Temporal's execution status", () => {
  test('a control to an aborted run: 409 run_ended with state ABORTED and executionStatus COMPLETED; the list row says executionStatus', async () => {
    h.model.register('params-stall', [{ text: 'slowly', chunkSize: 2, stallAfterChunks: 1 }]);
    const { body: started } = await api('POST', '/v1/runs', { prompt: 'p', model: 'params-stall' });
    const id = started.workflowId as string;
    await waitFor(async () => ((await api('GET', `/v1/runs/${id}`)).body.state === 'STREAMING' ? true : undefined), 20_000, 'streaming');
    expect((await api('POST', `/v1/runs/${id}/abort`, { reason: 'enough' })).status).toBe(202);
    expect((await api('GET', `/v1/runs/${id}/result`)).body.status).toBe('ABORTED');
    const late = await api('POST', `/v1/runs/${id}/pause`);
    expect(late).toEqual({
      status: 409,
      body: { error: { code: 'run_ended', message: `agent run ${id} has already ended (ABORTED)`, state: 'ABORTED', executionStatus: 'COMPLETED' } },
    });
    const row = await waitFor(async () => {
      const { body } = await api('GET', `/v1/runs?q=${id}`);
      const found = body.runs.find((r: { workflowId: string; agentState?: string }) => r.workflowId === id && r.agentState === 'ABORTED');
      return found;
    }, 15_000, 'the aborted run listed');
    expect(row).toMatchObject({ agentState: 'ABORTED', executionStatus: 'COMPLETED' });
    expect(row).not.toHaveProperty('status');
  }, 60_000);
});

describe('paths: an id that is none is named, a method a path does not take is 405', () => {
  test('every route refuses a non-ASCII run id with 400 naming `id`; DELETE and QUERY on known paths are 405 with Allow', async () => {
    for (const { method, path, op } of operations) {
      if (!path.includes('{id}')) continue;
      const url = path.replace('{id}', '%C2%B5%C3%87').replace('{step}', '1');
      const res = await api(method, url, method === 'POST' ? {} : undefined);
      expect([method, path, res.status, res.body.error?.message]).toEqual([method, path, 400, expect.stringContaining('Invalid path: id:')]);
      expect([path, op.responses['400']]).toEqual([path, expect.anything()]);
    }
    for (const [method, url, allow] of [
      ['DELETE', '/v1/runs', 'GET, HEAD, POST'],
      ['PUT', '/v1/runs/no-such-run/pause', 'POST'],
      ['QUERY', '/v1/runs/no-such-run', 'GET, HEAD'],
    ] as const) {
      const res = await app.inject({ method: method as 'DELETE', url, headers: auth });
      expect([method, url, res.statusCode, res.headers.allow, res.json().error.code]).toEqual([method, url, 405, allow, 'method_not_allowed']);
    }
    // Without the token a probe learns nothing: 401 before the 405.
    expect((await app.inject({ method: 'DELETE', url: '/v1/runs' })).statusCode).toBe(401);
  });
});
