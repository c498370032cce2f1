/**
 * The worker's tool policy on the real dev server, through the client, the CLI and the gateway: a denied call is
 * answered with the policy's message, a held one waits for a person, a rewritten one runs with the policy's arguments,
 * and a policy that answers nonsense denies the call, saying why. Each verdict is in the run's state.
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import type { ToolPolicy, ToolPolicyCall, ToolPolicyContext } from '../src/index';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 'tool-policy-test-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;
let baseUrl: string;
const asked: Array<{ call: ToolPolicyCall; context: ToolPolicyContext }> = [];

const policy: ToolPolicy = async (call, context) => {
  asked.push({ call, context });
  if (call.name === 'writeFile') return { action: 'deny', message: 'Writing is not allowed on this worker.' };
  if (call.name === 'readFile' && call.arguments?.path === 'secret.txt') return { action: 'approve', reason: 'secret.txt needs a person' };
  if (call.name === 'readFile' && String(call.arguments?.path).startsWith('../')) return { action: 'rewrite', arguments: { path: 'hello.txt' }, reason: 'kept inside the workspace' };
  if (call.name === 'readFile' && call.arguments?.path === 'bad.txt') return { action: 'rewrite', arguments: { file: 'hello.txt' } };
  return { action: 'allow' };
};

beforeAll(async () => {
  h = await startAgentHarness({ 'hello.txt': 'Hello from the workspace\n', 'secret.txt': 'the secret\n' }, { toolPolicy: policy });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

/** First call: the given tool calls; then an answer that quotes every tool result it was sent, in order. */
const callsThenQuote = (name: string, calls: Array<{ id: string; name: string; arguments: Record<string, unknown> }>) =>
  h.model.register(name, ({ callIndex, request }) =>
    callIndex === 0
      ? { toolCalls: calls }
      : { text: (request.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'tool').map((m) => m.content.trim()).join(' | ') },
  );

test('client: a denied call gets the policy message as its result and never runs; a rewritten one runs with the new arguments', async () => {
  callsThenQuote('deny-and-rewrite', [
    { id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'x' } },
    { id: 'r1', name: 'readFile', arguments: { path: '../hello.txt' } },
  ]);
  const handle = await agents.start({ prompt: 'Write, then read', model: 'deny-and-rewrite' });
  const final = await handle.watch(() => undefined);
  expect(final).toMatchObject({ state: 'COMPLETED', answer: 'Writing is not allowed on this worker. | Hello from the workspace' });
  expect(existsSync(path.join(h.workspace, 'out.txt'))).toBe(false);
  expect(final.recentToolCalls).toEqual([
    expect.objectContaining({ toolCallId: 'w1', policy: 'deny', ok: false, output: 'Writing is not allowed on this worker.' }),
    expect.objectContaining({ toolCallId: 'r1', policy: 'rewrite', arguments: '{"path":"hello.txt"}', ok: true }),
  ]);
  // Asked once per call, with the model's arguments; its verdicts replay from history, never asked again.
  const mine = asked.filter((a) => a.context.workflowId === handle.workflowId);
  expect(mine.map((a) => [a.call.name, a.call.arguments, a.context.callNumber])).toEqual([
    ['writeFile', { path: 'out.txt', content: 'x' }, 1],
    ['readFile', { path: '../hello.txt' }, 1],
  ]);
}, 30_000);

test('client: rewritten arguments the schema refuses deny the call, naming the problem', async () => {
  callsThenQuote('bad-rewrite', [{ id: 'b1', name: 'readFile', arguments: { path: 'bad.txt' } }]);
  const final = await (await agents.start({ prompt: 'Read', model: 'bad-rewrite' })).watch(() => undefined);
  expect(final.state).toBe('COMPLETED');
  expect(final.answer).toMatch(/^Not executed: the tool policy rewrote the arguments of readFile into invalid ones: .*path/);
  expect(final.recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 'b1', policy: 'deny', ok: false })]);
}, 30_000);

test('CLI: a call the policy holds waits in AWAITING_APPROVAL with its reason, and `agent approve` runs it', async () => {
  callsThenQuote('held-cli', [{ id: 's1', name: 'readFile', arguments: { path: 'secret.txt' } }]);
  let out = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  expect(await cli('start', 'Read the secret', '--model', 'held-cli', '--json')).toBe(0);
  const { workflowId } = JSON.parse(out) as { workflowId: string };
  const held = await h.waitForState(h.env.client.workflow.getHandle(workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  expect(held.reason).toBe('tool policy: held for approval readFile (s1): secret.txt needs a person');
  expect(held.pendingApproval).toEqual([expect.objectContaining({ toolCallId: 's1', name: 'readFile' })]);
  expect(await cli('approve', workflowId, 's1')).toBe(0);
  const final = await agents.handle(workflowId).watch(() => undefined);
  expect(final).toMatchObject({ state: 'COMPLETED', answer: 'the secret' });
  expect(final.recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 's1', policy: 'approve', ok: true })]);
}, 30_000);

test('gateway: a held call rejected over HTTP never runs, and the state says what the policy decided', async () => {
  callsThenQuote('held-gateway', [{ id: 's2', name: 'readFile', arguments: { path: 'secret.txt' } }]);
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const res = await fetch(`${baseUrl}/v1/runs`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'Read the secret', model: 'held-gateway' }) });
  expect(res.status).toBe(201);
  const { workflowId } = (await res.json()) as { workflowId: string };
  await h.waitForState(h.env.client.workflow.getHandle(workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  const state = (await (await fetch(`${baseUrl}/v1/runs/${workflowId}`, { headers })).json()) as { reason: string };
  expect(state.reason).toBe('tool policy: held for approval readFile (s2): secret.txt needs a person');
  const decided = await fetch(`${baseUrl}/v1/runs/${workflowId}/approvals`, { method: 'POST', headers, body: JSON.stringify({ toolCallId: 's2', approved: false }) });
  expect(decided.status).toBe(200);
  const final = await agents.handle(workflowId).watch(() => undefined);
  // It never ran: logged as rejected, with the policy that held it.
  expect(final).toMatchObject({ state: 'COMPLETED', answer: 'The user rejected this call.', recentToolCalls: [expect.objectContaining({ toolCallId: 's2', rejected: true, policy: 'approve', ok: false })] });
}, 30_000);
