/**
 * What-if forks on the real server: a fork with an edited tool result reuses the original's recorded model answers
 * until its requests differ (the scripted model's request log shows which calls were sent), then the two runs are
 * compared side by side through the client, the CLI and the gateway.
 */
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 'what-if-token';
const MODEL = 'what-if-reader';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;
let source: { workflowId: string; toolCallIds: string[] };

/** Three tool calls, then an answer that quotes what the tools said. */
const script = ({ request }: { request: { messages: any[] } }) => {
  const results = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content).split('\n')[0]);
  if (results.length < 3) return { toolCalls: [{ name: results.length % 2 ? 'listFiles' : 'readFile', arguments: results.length % 2 ? { path: '.' } : { path: 'hello.txt' } }] };
  return { text: `saw: ${results.join(' | ')}` };
};

beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, logger: false });
  h.model.register(MODEL, script);
  const run = await agents.start({ prompt: 'look around', model: MODEL, limits: { maxRepeats: 10 } });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', toolCalls: 3 });
  const view = await run.state();
  source = { workflowId: run.workflowId, toolCallIds: view.recentToolCalls.map((c) => c.toolCallId) };
}, 60_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const api = async (method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() };
};
const cli = async (...argv: string[]) => {
  let out = '';
  let err = '';
  const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
};
const sentSince = (before: number) => h.model.requests(MODEL).slice(before);

test('an edited tool result: the model calls before it are replayed, not sent; those after it are', async () => {
  expect(source.toolCallIds).toHaveLength(3);
  const second = source.toolCallIds[1];
  const before = h.model.requests(MODEL).length;
  const fork = await agents.fork(source.workflowId, 0, { edits: { toolResults: { [second]: 'EDITED listing' } } });
  const result = await fork.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'saw: Hello from the workspace | EDITED listing | Hello from the workspace', toolCalls: 3 });
  // Calls 1 and 2 (before the edited result) were answered from the record; 3 and 4 were sent, 3 carrying the edit.
  const sent = sentSince(before);
  expect(sent).toHaveLength(2);
  expect(sent[0].body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content)).toEqual([expect.stringContaining('Hello from the workspace'), 'EDITED listing']);
  const view = await fork.state();
  expect(view.usage).toMatchObject({ modelCalls: 4, replayedCalls: 2 });
  expect(view.origin).toEqual({ kind: 'fork', workflowId: source.workflowId, step: 0 });

  // Side by side: the fork's edited result and answer, by path, through the client, the CLI and the gateway.
  const diff = await agents.diffRuns(source.workflowId, fork.workflowId);
  expect(diff.runs).toEqual({ from: source.workflowId, to: fork.workflowId });
  expect(diff.changes).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ path: 'answer', kind: 'changed', after: result.answer }),
      expect.objectContaining({ path: 'messages[5].content', kind: 'changed', after: 'EDITED listing' }),
    ]),
  );
  expect((await api('GET', `/v1/runs/${source.workflowId}/diff?against=${fork.workflowId}`)).body).toEqual(JSON.parse(JSON.stringify(diff)));
  const text = await cli('diff', '--runs', source.workflowId, fork.workflowId);
  expect([text.code, text.err]).toEqual([0, '']);
  expect(text.out.split('\n')[0]).toMatch(new RegExp(`^${source.workflowId} \\(step \\d+\\) -> ${fork.workflowId} \\(step \\d+\\)$`));
  expect(text.out).toContain('  messages[5].content: ');
});

test('a fork with no edit and replay asked for sends nothing: every request is the original\'s', async () => {
  const before = h.model.requests(MODEL).length;
  const fork = await agents.fork(source.workflowId, 0, { replay: true });
  expect(await fork.result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: Hello from the workspace | hello.txt | Hello from the workspace' });
  expect(sentSince(before)).toHaveLength(0);
  expect((await fork.state()).usage).toMatchObject({ modelCalls: 4, replayedCalls: 4, totalTokens: 0 });
});

test('the CLI and the gateway: a what-if fork with a new system prompt sends every call again; with --no-replay too', async () => {
  const before = h.model.requests(MODEL).length;
  const r = await cli('fork', source.workflowId, '--from-step', '0', '--system-prompt', 'You are terse.', '--json');
  expect([r.code, r.err]).toEqual([0, '']);
  const forked = agents.handle(JSON.parse(r.out).workflowId);
  expect(await forked.result()).toMatchObject({ status: 'COMPLETED' });
  const sent = sentSince(before);
  expect(sent).toHaveLength(4);
  expect(sent[0].body.messages[0]).toEqual({ role: 'system', content: 'You are terse.' });

  const second = source.toolCallIds[1];
  const res = await api('POST', `/v1/runs/${source.workflowId}/fork`, { fromStep: 0, edits: { toolResults: { [second]: 'from the gateway' } } });
  expect(res.status).toBe(201);
  const viaGateway = agents.handle(res.body.workflowId);
  expect(await viaGateway.result()).toMatchObject({ answer: 'saw: Hello from the workspace | from the gateway | Hello from the workspace' });
  expect((await viaGateway.state()).usage.replayedCalls).toBe(2);
  expect((await api('POST', `/v1/runs/${source.workflowId}/fork`, { fromStep: 0, edits: { colour: 'red' } })).status).toBe(400);

  const unreplayed = h.model.requests(MODEL).length;
  const noReplay = await cli('fork', source.workflowId, '--from-step', '0', '--message', 'and be brief', '--no-replay', '--json');
  expect(await agents.handle(JSON.parse(noReplay.out).workflowId).result()).toMatchObject({ status: 'COMPLETED' });
  const sentAgain = sentSince(unreplayed);
  expect(sentAgain).toHaveLength(4);
  expect(sentAgain.at(-1)!.body.messages).toContainEqual({ role: 'user', content: 'and be brief' });

  const bad = await cli('fork', source.workflowId, '--from-step', '0', '--tool-result', 'no-equals-sign');
  expect([bad.code, bad.err]).toEqual([1, 'error: --tool-result must be <toolCallId>=<text>, got "no-equals-sign"\n']);
}, 60_000);
