/**
 * What-if forks on the real server: a fork with an edited tool result reuses the original's recorded model answers
 * (model calls, the model critic's decisions, compactions' summaries) until its requests differ (the scripted model's
 * request log shows which calls were sent), then the two runs are compared side by side through the client, the CLI
 * and the gateway. A custom critic is the worker's code: it runs again in a fork, and does not end the replay.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { CriticDecision } from '../src/activities';
import type { RecordedRequest } from '../src/scripted-model';
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

/** Each custom critic decision, by the run it judged: the worker's code, called again in a fork. */
const tallied: string[] = [];
const tally = (request: { toolResults?: unknown[] }, context: { workflowId: string }): CriticDecision => {
  tallied.push(context.workflowId);
  return request.toolResults ? { action: 'continue', reason: 'the tools ran' } : { action: 'complete', reason: 'answered' };
};

beforeAll(async () => {
  h = await startAgentHarness(undefined, { critics: { tally } });
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

/** Which of the worker's requests the scripted model got: a model call (streamed), the model critic's or a compaction's. */
const kindOf = (r: RecordedRequest): 'model' | 'critic' | 'compaction' =>
  r.stream ? 'model' : String(r.body.messages[0].content).startsWith('You summarise') ? 'compaction' : 'critic';
const countKinds = (requests: RecordedRequest[]) => {
  const counts = { model: 0, critic: 0, compaction: 0 };
  for (const r of requests) counts[kindOf(r)]++;
  return counts;
};

test('the model critic and a compaction before the edit are replayed, not sent; those after it are', async () => {
  const model = 'what-if-judged';
  mkdirSync(path.join(h.workspace, 'notes'), { recursive: true });
  writeFileSync(path.join(h.workspace, 'notes', 'big.txt'), `${'a long file line\n'.repeat(1_250)}`);
  // Reads the big file (which makes the run compact before call 2), lists, reads hello.txt, then answers with what the
  // results it still sees said. A compaction's summary stands for the one result it summarised.
  h.model.register(model, ({ request }) => {
    const system = String(request.messages[0]?.content ?? '');
    if (!request.stream) {
      if (system.startsWith('You summarise')) return { text: 'big.txt was read: a long file' };
      const toolStep = system.includes("assistant's tool calls");
      return { text: JSON.stringify(toolStep ? { action: 'continue', reason: 'the tools ran', confidence: 90 } : { action: 'complete', reason: 'done', confidence: 90 }) };
    }
    const tools = request.messages.filter((m: any) => m.role === 'tool').map((m: any) => String(m.content).split('\n')[0]);
    const summarised = request.messages.some((m: any) => m.role === 'user' && String(m.content).startsWith('Summary of the earlier conversation:'));
    const seen = tools.length + (summarised ? 1 : 0);
    if (seen === 0) return { toolCalls: [{ name: 'readFile', arguments: { path: 'notes/big.txt' } }] };
    if (seen === 1) return { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] };
    if (seen === 2) return { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] };
    return { text: `saw: ${tools.join(' | ')}` };
  });
  const run = await agents.start({ prompt: 'read the notes', model, critique: 'model', contextWindowTokens: 4_000 });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: hello.txt | Hello from the workspace', toolCalls: 3 });
  const original = h.model.requests(model);
  expect(original.map(kindOf)).toEqual(['model', 'critic', 'compaction', 'model', 'critic', 'model', 'critic', 'model', 'critic']);
  const listing = (await run.state()).recentToolCalls[1];
  expect(listing.name).toBe('listFiles');

  // The listing (after call 2) edited: call 1, the critic's word on the big file's read and the compaction after it are
  // the original's requests, answered from the record; the critic's word on the edited listing is the first that is not.
  const fork = await agents.fork(run.workflowId, 0, { edits: { toolResults: { [listing.toolCallId]: 'EDITED listing' } } });
  expect(await fork.result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: EDITED listing | Hello from the workspace' });
  const sent = h.model.requests(model).slice(original.length);
  expect(sent.map(kindOf)).toEqual(['critic', 'model', 'critic', 'model', 'critic']);
  expect(sent[0].body.messages[1].content).toContain('EDITED listing');
  expect(countKinds(sent)).toEqual({ model: 2, critic: 3, compaction: 0 });
  const view = await fork.state();
  expect(view.transitions.map((t) => t.to)).toContain('COMPACTING');
  expect(view.usage).toMatchObject({ modelCalls: 4, replayedCalls: 2, replayedCritiques: 1, replayedCompactions: 1 });

  // A fork with nothing edited and replay asked for sends nothing at all: every critique and the compaction too.
  const again = await agents.fork(run.workflowId, 0, { replay: true });
  expect(await again.result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: hello.txt | Hello from the workspace' });
  expect(h.model.requests(model).length).toBe(original.length + sent.length);
  expect((await again.state()).usage).toMatchObject({ totalTokens: 0, replayedCalls: 4, replayedCritiques: 4, replayedCompactions: 1 });
}, 60_000);

test('a custom critic runs again in a fork, and its decisions do not end the replay of the model calls', async () => {
  const run = await agents.start({ prompt: 'look around', model: MODEL, limits: { maxRepeats: 10 }, critique: { custom: 'tally' } });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', toolCalls: 3 });
  const judged = tallied.filter((id) => id === run.workflowId).length;
  expect(judged).toBe(4); // three tool steps and the answer
  const second = (await run.state()).recentToolCalls[1].toolCallId;
  const before = h.model.requests(MODEL).length;
  const fork = await agents.fork(run.workflowId, 0, { edits: { toolResults: { [second]: 'EDITED listing' } } });
  expect(await fork.result()).toMatchObject({ status: 'COMPLETED', answer: 'saw: Hello from the workspace | EDITED listing | Hello from the workspace' });
  // Calls 1 and 2 replayed across the critic's decision on the first tool step; the critic itself judged every step again.
  expect(sentSince(before)).toHaveLength(2);
  expect(tallied.filter((id) => id === fork.workflowId)).toHaveLength(judged);
  const usage = (await fork.state()).usage;
  expect(usage).toMatchObject({ modelCalls: 4, replayedCalls: 2 });
  expect(usage.replayedCritiques).toBeUndefined();
});
