/**
 * Approvals that cannot hang, and limits that end a run well, on the real dev server: through the client, the CLI and
 * the gateway. `approval.onTimeout: 'reject'` goes on without the calls nobody decided on, `approval.reminderAt`
 * raises an `approvalReminder` event from the run's own timer, `limits.maxPausedMs` aborts a run paused too long, and
 * `limits.onLimit: 'complete'` ends a run at its limit with the last text.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient, type WatchEvent } from '../src/client';
import { pauseSignal } from '../src/common/messages';
import { buildGateway } from '../src/gateway/index';
import { approvalTimedOut, TOOL_RETRY_NOTE } from '../src/machine/machine';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { readSse } from './support/sse';

const TOKEN = 'approvals-test-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

/** First call: a guarded write; then an answer that says what the model was told about it. */
const writeThenAnswer = (name: string) =>
  h.model.register(name, ({ callIndex, request }) =>
    callIndex === 0
      ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: `${name}.txt`, content: 'ok' } }] }
      : { text: `told: ${String((request.messages as Array<{ role: string; content: string }>).find((m) => m.role === 'tool')?.content)}` },
  );

const guarded = (model: string, approval: object) => ({
  prompt: 'Write it',
  model,
  approval: { tools: ['writeFile'], ...approval },
  limits: { approvalTimeoutMs: 2_000 },
});

test("client: a reminder at approval.reminderAt of the window, then 'reject' tells the model and the run goes on", async () => {
  writeThenAnswer('reject-on-timeout');
  const handle = await agents.start(guarded('reject-on-timeout', { onTimeout: 'reject', reminderAt: 0.5 }));
  const seen: WatchEvent[] = [];
  const final = await handle.watch((e) => void seen.push(e));
  const reminders = seen.filter((e) => e.type === 'approvalReminder');
  expect(reminders).toEqual([{ type: 'approvalReminder', at: expect.any(String), deadline: expect.any(String), onTimeout: 'reject', toolCallIds: ['w1'] }]);
  // Raised by the run's timer at half the window, by workflow time: never before it (at most a second before the
  // deadline), and before the deadline (a loaded worker runs the timer's task late, so not exactly a second before).
  const [r] = reminders as Array<Extract<WatchEvent, { type: 'approvalReminder' }>>;
  const beforeDeadline = Date.parse(r.deadline) - Date.parse(r.at);
  expect(beforeDeadline).toBeLessThanOrEqual(1_000);
  expect(beforeDeadline).toBeGreaterThan(0);
  expect(seen.findIndex((e) => e === r)).toBeGreaterThan(seen.findIndex((e) => e.type === 'approval'));
  expect(final).toMatchObject({ state: 'COMPLETED', answer: `told: ${approvalTimedOut(2_000)}` });
  // The write never ran: it is logged as rejected, with what the model was told.
  expect(final.recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 'w1', rejected: true, ok: false, output: approvalTimedOut(2_000) })]);
}, 30_000);

test("the default 'fail' still ends the run, and with no reminderAt no reminder is raised", async () => {
  writeThenAnswer('fail-on-timeout');
  const handle = await agents.start(guarded('fail-on-timeout', {}));
  const seen: WatchEvent[] = [];
  const final = await handle.watch((e) => void seen.push(e));
  expect([final.state, final.reason]).toEqual(['FAILED', 'no decision on writeFile within 2000 ms (limits.approvalTimeoutMs)']);
  expect(seen.filter((e) => e.type === 'approvalReminder')).toEqual([]);
}, 30_000);

test('client: limits.maxPausedMs aborts a run paused that long, with the reason', async () => {
  h.model.register('paused-too-long', ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }], firstChunkDelayMs: 500 } : { text: 'listed' }));
  const handle = await agents.start({ prompt: 'List', model: 'paused-too-long', limits: { maxPausedMs: 1_500 } });
  await h.waitForState(h.env.client.workflow.getHandle(handle.workflowId), (s) => s.state === 'STREAMING');
  await h.env.client.workflow.getHandle(handle.workflowId).signal(pauseSignal);
  const paused = await h.waitForState(h.env.client.workflow.getHandle(handle.workflowId), (s) => s.state === 'PAUSED');
  expect(paused.pausedDeadline).not.toBeNull();
  const final = await handle.watch(() => undefined);
  expect([final.state, final.reason]).toEqual(['ABORTED', 'aborted: paused for 1500 ms (limits.maxPausedMs)']);
}, 30_000);

test("CLI: --on-limit complete ends a run at --max-loops COMPLETED with the last text; the reminder is a watch line", async () => {
  h.model.register('at-the-limit', [{ text: 'first draft', toolCalls: [{ name: 'listFiles', arguments: {} }] }, { text: 'never asked' }]);
  let out = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  expect(await cli('start', 'List', '--model', 'at-the-limit', '--max-loops', '1', '--on-limit', 'complete', '--watch', '--json')).toBe(0);
  const end = out.trim().split('\n').map((l) => JSON.parse(l)).find((e) => e.type === 'end');
  expect(end.state).toMatchObject({
    state: 'COMPLETED',
    answer: 'first draft',
    reason: 'loop limit reached: 1 model calls, limits.maxLoops is 1: completed with the last text (limits.onLimit is complete)',
  });
  expect(h.model.requests('at-the-limit')).toHaveLength(1);

  writeThenAnswer('cli-reminder');
  out = '';
  const args = ['--model', 'cli-reminder', '--approve-tools', 'writeFile', '--approval-timeout-ms', '2000', '--on-approval-timeout', 'reject', '--approval-reminder-at', '0.5', '--watch'];
  expect(await cli('start', 'Write it', ...args)).toBe(0);
  expect(out).toMatch(/reminder: w1 still waiting for approval; at .* the run will reject them and go on/);

  out = '';
  // The default window (7 days) will do; a run given none at all is refused.
  const refused = await agents.start({ prompt: 'Write it', approval: { tools: ['writeFile'], reminderAt: 0.5 }, limits: { approvalTimeoutMs: null } }).catch((err: Error) => err.message);
  expect(refused).toContain('approval.reminderAt: needs limits.approvalTimeoutMs (the window it is a share of), not null');
}, 40_000);

test('gateway: the SSE stream carries approvalReminder before the run goes on', async () => {
  writeThenAnswer('sse-reminder');
  const res = await fetch(`${baseUrl}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(guarded('sse-reminder', { onTimeout: 'reject', reminderAt: 0.5 })),
  });
  expect(res.status).toBe(201);
  const { workflowId } = (await res.json()) as { workflowId: string };
  const stream = await fetch(`${baseUrl}/v1/runs/${workflowId}/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const events = (await readSse(stream)).filter((m) => m.event);
  const names = events.map((m) => m.event);
  const reminder = events.find((m) => m.event === 'approvalReminder');
  expect(reminder?.data).toMatchObject({ type: 'approvalReminder', onTimeout: 'reject', toolCallIds: ['w1'] });
  expect(names.indexOf('approvalReminder')).toBeGreaterThan(names.indexOf('approval'));
  expect(events.at(-1)).toMatchObject({ event: 'end', data: { state: { state: 'COMPLETED', answer: `told: ${approvalTimedOut(2_000)}` } } });
  const state = await fetch(`${baseUrl}/v1/runs/${workflowId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(((await state.json()) as { approvalReminder: unknown }).approvalReminder).toBeNull();
}, 30_000);

test("client: a model critic answering on the 0-100 scale is heard, not replaced by the rules", async () => {
  h.model.register('percent-critic-run', ({ request }) =>
    request.response_format || String(request.messages?.[0]?.content).includes('You review')
      ? { text: JSON.stringify({ action: 'complete', reason: 'the answer does the task', confidence: 85 }) }
      : { text: 'Four.' },
  );
  const final = await (await agents.start({ prompt: 'Add 2 and 2', model: 'percent-critic-run', critique: 'model' })).watch(() => undefined);
  expect(final).toMatchObject({ state: 'COMPLETED', answer: 'Four.', lastCritique: { action: 'complete', confidence: 85, reason: 'the answer does the task' } });
}, 30_000);

/**
 * A model critic that judges a tool step: retry (or replan) the first one, continue after, and complete the answer.
 * The run's own model is asked only for the task's steps: one listFiles, then an answer.
 */
const toolCritic = (name: string, onFirstToolStep: 'retry' | 'replan') => {
  let toolSteps = 0;
  h.model.register(name, ({ request }) => {
    const system = String(request.messages?.[0]?.content);
    if (system.includes('tool calls toward a task')) {
      toolSteps += 1;
      return { text: JSON.stringify({ action: toolSteps === 1 ? onFirstToolStep : 'continue', reason: 'list the workspace root instead', confidence: 90 }) };
    }
    if (system.includes('You review')) return { text: JSON.stringify({ action: 'complete', reason: 'done', confidence: 90 }) };
    const told = (request.messages as Array<{ role: string; content: string }>).some((m) => m.role === 'user' && m.content.startsWith(TOOL_RETRY_NOTE));
    const tools = (request.messages as Array<{ role: string }>).filter((m) => m.role === 'tool').length;
    if (!request.tools?.length) return { text: '1. List the root.' };
    return tools < 2 ? { toolCalls: [{ name: 'listFiles', arguments: { path: tools === 0 ? 'sub' : '.' } }] } : { text: told ? 'Listed, as the reviewer asked.' : 'Listed.' };
  });
};

test('client: with critique model, the model critic judges a tool step from its results, and its retry reaches the model', async () => {
  toolCritic('tool-critic-run', 'retry');
  const final = await (await agents.start({ prompt: 'List the files', model: 'tool-critic-run', critique: 'model' })).watch(() => undefined);
  expect(final).toMatchObject({ state: 'COMPLETED', answer: 'Listed, as the reviewer asked.', lastCritique: { action: 'complete' } });
  const requests = h.model.requests('tool-critic-run').map((r) => r.body as { messages: Array<{ role: string; content: string }> });
  const judged = requests.filter((r) => String(r.messages[0]?.content).includes('tool calls toward a task'));
  expect(judged).toHaveLength(2);
  expect(judged[0].messages[1].content).toMatch(/^Task:\nList the files\n\nTool calls:\n1\. listFiles \{"path":"sub"\}\n(Result|Error): /);
  // The critic's retry, with its reason, is the model's next user message after the tool result.
  const second = requests.filter((r) => !String(r.messages[0]?.content).includes('review'))[1];
  expect(second.messages.at(-1)).toEqual({ role: 'user', content: `${TOOL_RETRY_NOTE}list the workspace root instead` });
}, 30_000);

test("gateway: a model critic's replan after a tool step sends the run back to PLANNING", async () => {
  toolCritic('tool-critic-gateway', 'replan');
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const res = await fetch(`${baseUrl}/v1/runs`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'List the files', model: 'tool-critic-gateway', critique: 'model' }) });
  expect(res.status).toBe(201);
  const { workflowId } = (await res.json()) as { workflowId: string };
  const stream = await fetch(`${baseUrl}/v1/runs/${workflowId}/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const end = (await readSse(stream)).find((m) => m.event === 'end');
  expect(end?.data).toMatchObject({ state: { state: 'COMPLETED', answer: 'Listed.' } });
  const state = (await (await fetch(`${baseUrl}/v1/runs/${workflowId}`, { headers })).json()) as { transitions: Array<{ from: string; to: string; event: string }> };
  expect(state.transitions).toContainEqual(expect.objectContaining({ from: 'CRITIQUE', to: 'PLANNING', event: 'CRITIQUE_DONE' }));
}, 30_000);

test('a rejected call ends in every view: /events toolEnd, the client watch and recentToolCalls, the CLI watch', async () => {
  writeThenAnswer('rejected-everywhere');
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const res = await fetch(`${baseUrl}/v1/runs`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'Write it', model: 'rejected-everywhere', approval: { tools: ['writeFile'] } }) });
  expect(res.status).toBe(201);
  const { workflowId } = (await res.json()) as { workflowId: string };
  const sse = fetch(`${baseUrl}/v1/runs/${workflowId}/events`, { headers }).then((r) => readSse(r));
  const seen: WatchEvent[] = [];
  const watching = agents.handle(workflowId).watch((e) => void seen.push(e));
  await h.waitForState(h.env.client.workflow.getHandle(workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  let out = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  expect(await cli('approve', workflowId, 'w1', '--reject', '--feedback', 'not that file')).toBe(0);

  const final = await watching;
  expect(final).toMatchObject({ state: 'COMPLETED', answer: expect.stringMatching(/^told: The user rejected this call/) });
  const told = final.answer!.slice('told: '.length);
  expect(final.recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 'w1', name: 'writeFile', rejected: true, ok: false, output: told })]);
  const toolEnd = { type: 'toolEnd', toolCallId: 'w1', name: 'writeFile', ok: false, rejected: true, output: told };
  expect(seen).toContainEqual(expect.objectContaining(toolEnd));
  // The call starts and ends with the decision, before the run moves on from TOOL_EXECUTING.
  const kinds = seen.map((e) => (e.type === 'transition' ? `${e.transition.from}->${e.transition.to}` : e.type));
  expect(kinds.indexOf('toolStart')).toBeGreaterThan(kinds.indexOf('AWAITING_APPROVAL->TOOL_EXECUTING'));
  expect(kinds.indexOf('toolEnd')).toBeGreaterThan(kinds.indexOf('toolStart'));
  expect(kinds.indexOf('TOOL_EXECUTING->CRITIQUE')).toBeGreaterThan(kinds.indexOf('toolEnd'));

  const events = (await sse).filter((m) => m.event);
  expect(events.find((m) => m.event === 'toolEnd')?.data).toMatchObject(toolEnd);
  expect(events.map((m) => m.event).indexOf('toolEnd')).toBeGreaterThan(events.map((m) => m.event).indexOf('approval'));

  out = '';
  expect(await cli('watch', workflowId)).toBe(0);
  expect(out).toContain(`tool writeFile rejected, not run: ${told}`);
}, 30_000);

test("CLI: agent state shows the approval deadline and what it does, a pause's way back and time left, the open conversation, the tool calls with edits", async () => {
  writeThenAnswer('state-lines');
  let out = '';
  const cli = async (...argv: string[]) => {
    out = '';
    return runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  };
  const run = await agents.start({ prompt: 'Write it', model: 'state-lines', approval: { tools: ['writeFile'], onTimeout: 'reject' }, limits: { approvalTimeoutMs: 60_000 }, keepOpenMs: 10_000 });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  expect(await cli('state', run.workflowId)).toBe(0);
  expect(out).toMatch(/\n {2}approval deadline \d\d:\d\d:\d\d\.\d{3}: then the run rejects the undecided calls and goes on\n/);
  expect(out).toMatch(/\n {2}working time left \d+ ms \(the clock stops while a person decides\)\n/);

  await run.approve({ toolCallId: 'w1', approved: true, arguments: { path: 'state-lines-edited.txt', content: 'edited' } }, { by: { kind: 'user', sub: 'alice', tenant: 'acme' } });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.state === 'COMPLETED');
  expect(await cli('state', run.workflowId)).toBe(0);
  expect(out).toContain('\n  conversation open: `agent send` continues it with a follow-up turn (keepOpenMs)\n');
  expect(out).toMatch(
    /\ntool calls \(last 1\):\n {2}step \d+ {2}w1 {2}writeFile \{"path":"state-lines-edited\.txt","content":"edited"\} \[edited\] \[approved by user alice \(acme\) at \d\d:\d\d:\d\d\.\d{3}\] {2}ok: /,
  );

  h.model.register('state-paused', ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }], firstChunkDelayMs: 500 } : { text: 'listed' }));
  const paused = await agents.start({ prompt: 'List', model: 'state-paused', limits: { maxPausedMs: 60_000 } });
  await h.waitForState(h.env.client.workflow.getHandle(paused.workflowId), (s) => s.state === 'STREAMING');
  await paused.pause();
  await h.waitForState(h.env.client.workflow.getHandle(paused.workflowId), (s) => s.state === 'PAUSED');
  expect(await cli('state', paused.workflowId)).toBe(0);
  expect(out).toMatch(/\n {2}paused: resume goes on in TOOL_EXECUTING, working time left \d+ ms\n {2}aborted at \d\d:\d\d:\d\d\.\d{3} unless resumed \(limits\.maxPausedMs\)\n/);
  await paused.abort('test over');
}, 40_000);

test('who decided: the client\'s by, the gateway\'s caller and the CLI\'s operator are recorded with the time, in the view and in agent state', async () => {
  h.model.register('who-decided', ({ callIndex }) =>
    callIndex === 0
      ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'who-1.txt', content: 'a' } }, { id: 'w2', name: 'writeFile', arguments: { path: 'who-2.txt', content: 'b' } }, { id: 'w3', name: 'writeFile', arguments: { path: 'who-3.txt', content: 'c' } }] }
      : { text: 'done' },
  );
  const alice = { kind: 'user' as const, sub: 'alice', tenant: 'acme' };
  const run = await agents.start({ prompt: 'Write them', model: 'who-decided', approval: { tools: ['writeFile'] } });
  const wf = h.env.client.workflow.getHandle(run.workflowId);
  await h.waitForState(wf, (s) => s.state === 'AWAITING_APPROVAL');
  const sent = Date.now();
  // The client, naming its caller.
  await run.approve({ toolCallId: 'w1', approved: true }, { by: alice });
  let waiting = await run.state();
  expect(waiting.pendingApproval.find((p) => p.toolCallId === 'w1')?.decision).toEqual({ approved: true, by: alice, at: expect.any(String) });
  const at = Date.parse(waiting.pendingApproval[0].decision!.at!);
  expect(at).toBeGreaterThanOrEqual(sent - 1_000);
  expect(at).toBeLessThanOrEqual(Date.now() + 1_000);
  // The gateway, for its caller (the service until the gateway authenticates people).
  const res = await fetch(`${baseUrl}/v1/runs/${run.workflowId}/approvals`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ toolCallId: 'w2', approved: false, feedback: 'not that one' }),
  });
  expect(res.status).toBe(200);
  waiting = await run.state();
  expect(waiting.pendingApproval.find((p) => p.toolCallId === 'w2')?.decision).toMatchObject({ approved: false, by: { kind: 'service' } });
  // A body that names someone else is refused: who decides is the caller, never the body's say.
  const forged = await fetch(`${baseUrl}/v1/runs/${run.workflowId}/approvals`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ toolCallId: 'w3', approved: true, by: alice }),
  });
  expect(forged.status).toBe(400);
  // The CLI, as the operator at it.
  let out = '';
  const cli = async (...argv: string[]) => {
    out = '';
    return runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  };
  expect(await cli('approve', run.workflowId, 'w3')).toBe(0);
  const final = await run.watch(() => undefined);
  expect(final.state).toBe('COMPLETED');
  const operator = { kind: 'operator', name: expect.any(String) };
  const who = Object.fromEntries(final.recentToolCalls.map((t) => [t.toolCallId, [t.decidedBy, typeof t.decidedAt]]));
  expect(who).toEqual({ w1: [alice, 'string'], w2: [{ kind: 'service' }, 'string'], w3: [operator, 'string'] });
  expect(final.controls.map((c) => [c.event, c.toolCallId, c.approved, c.by])).toEqual([
    ['APPROVAL', 'w1', true, alice],
    ['APPROVAL', 'w2', false, { kind: 'service' }],
    ['APPROVAL', 'w3', true, operator],
  ]);
  // History holds it too: the update's payload.
  const history = await wf.fetchHistory();
  const payloads = (history.events ?? []).flatMap((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads ?? []);
  expect(payloads.map((p) => JSON.parse(Buffer.from(p.data!).toString()).by)).toEqual([alice, undefined, operator]);

  expect(await cli('state', run.workflowId)).toBe(0);
  expect(out).toMatch(/ w1 {2}writeFile .* \[approved by user alice \(acme\) at \d\d:\d\d:\d\d\.\d{3}\] {2}ok/);
  expect(out).toMatch(/ w2 {2}writeFile .* \[rejected by service at \d\d:\d\d:\d\d\.\d{3}\] {2}rejected/);
  expect(out).toMatch(/\ncontrols:\n {2}\d\d:\d\d:\d\d\.\d{3} {2}APPROVAL w1 approved {2}by user alice \(acme\) \(step \d+\)\n/);
  expect(out).toMatch(/APPROVAL w3 approved {2}by operator \S+ \(step \d+\)/);
}, 40_000);
