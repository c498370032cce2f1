/**
 * Time travel on the real server through every interface: the client's `fork`, `steps` and `diff`, the CLI's
 * `history`, `diff` and `fork`, and the gateway's `/steps`, `/diff` and `/fork` routes. One recorded run (a tool call,
 * then an answer) is forked from each of its steps, and from steps it does not hold.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient, type AgentRunHandle } from '../src/client';
import { parseAgentRunInput } from '../src/common/input';
import type { RunStateView } from '../src/common/messages';
import type { ToolCallRecord } from '../src/common/view';
import { buildGateway } from '../src/gateway/index';
import { formatDiff } from '../src/cli/format-diff';
import { diffSnapshots } from '../src/client/time-travel';
import { initialSnapshot } from '../src/machine/snapshot';
import { publicView } from '../src/workflows/view';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 'time-travel-token';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;
/** The recorded run every test forks: read a file, then answer. */
let source: { workflowId: string; last: number; final: RunStateView };

const MODEL = 'tt-reader';
const ANSWER = 'it says hello';

beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100, logger: !!process.env.TT_LOG });
  h.model.register(MODEL, ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool') ? { text: ANSWER } : { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] },
  );
  const run = await agents.start({ prompt: 'read hello.txt', model: MODEL });
  await run.result();
  const final = await run.state();
  source = { workflowId: run.workflowId, last: final.step, final };
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const api = async (method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
};

const cli = async (...argv: string[]) => {
  let out = '';
  let err = '';
  const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
};

/** The fork's result, or a failure naming the state it is stuck in: a fork that never moves must not wait out its 5 minutes. */
async function settled(workflowId: string, withinMs = 20_000) {
  const handle = agents.handle(workflowId);
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void handle
        .state()
        .then((s) => new Error(`fork ${workflowId} still ${s.state} at step ${s.step} after ${withinMs} ms`), (err: unknown) => err)
        // Ended here, so that its pending result does not outlive the test.
        .then(async (err) => reject(await h.env.client.workflow.getHandle(workflowId).terminate('stuck').then(() => err, () => err)));
    }, withinMs);
  });
  try {
    return await Promise.race([handle.result(), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every step a fork can start from: all but the last, which is the run's end. */
const forkable = () => Array.from({ length: source.last }, (_, step) => step);

test('the recorded run: a tool call, then an answer; its steps as the client, the CLI and the gateway list them', async () => {
  expect(source.final).toMatchObject({ state: 'COMPLETED', answer: ANSWER, toolCalls: 1 });
  const expected = source.final.transitions.map((t, i) => ({ step: i + 1, ...t }));
  expect(source.last).toBe(expected.length);
  expect(await agents.handle(source.workflowId).steps()).toEqual(expected);
  expect(JSON.parse((await cli('history', source.workflowId, '--json')).out)).toEqual(expected);
  expect(await api('GET', `/v1/runs/${source.workflowId}/steps`)).toMatchObject({ status: 200, body: { steps: expected } });
});

test('client: a fork from every step of the run starts and completes; step 0 is a fresh run of the same input', async () => {
  const before = h.model.requests(MODEL).length;
  // One fork at a time: each replays the closed run on the worker, and eight at once on a loaded machine (CI) left
  // one of those replays waiting past the 15 s time-travel deadline.
  const forks: AgentRunHandle[] = [];
  for (const step of forkable()) forks.push(await agents.fork(source.workflowId, step));
  const results = await Promise.all(forks.map((f) => settled(f.workflowId)));
  for (const [step, result] of results.entries()) expect([step, result]).toEqual([step, expect.objectContaining({ status: 'COMPLETED', answer: ANSWER, toolCalls: 1 })]);

  // From step 0 the fork asks the model everything again, as the run did: the tool call, then the answer.
  const fromStart = await forks[0].state({ includeMessages: true });
  expect(fromStart.origin).toEqual({ kind: 'fork', workflowId: source.workflowId, step: 0 });
  expect(fromStart.loops).toBe(2);
  expect(fromStart.messages?.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['read hello.txt']);
  // Every fork made only the model calls its step had not made yet (2 from steps 0-1, 1 from 2-5, none after).
  const calls = forkable().map((step): number => (step <= 1 ? 2 : step <= 5 ? 1 : 0));
  expect(h.model.requests(MODEL).length - before).toBe(calls.reduce((a, b) => a + b, 0));
});

test('client: a fork from the last step, past it or before 0 is refused with an error that names the step', async () => {
  const { workflowId, last } = source;
  await expect(agents.fork(workflowId, last)).rejects.toThrow(`step ${last} of ${workflowId} is COMPLETED: fork from an earlier step`);
  await expect(agents.fork(workflowId, last + 1)).rejects.toThrow(`step ${last + 1} is not in this run: it holds steps 0 to ${last}`);
  await expect(agents.fork(workflowId, -1)).rejects.toThrow('fromStep must be a step number (0 or more), got -1');
  await expect(agents.fork('no-such-run', 0)).rejects.toThrow('no agent run with id no-such-run');
});

test('CLI: agent fork from every step starts a run that completes; the last, past it and -1 exit 1 with one clear line', async () => {
  const started = [];
  for (const step of forkable()) started.push(await cli('fork', source.workflowId, '--from-step', String(step), '--json'));
  for (const [step, r] of started.entries()) {
    expect([step, r.code, r.err]).toEqual([step, 0, '']);
    const forked = JSON.parse(r.out);
    expect(forked.forkedFrom).toEqual({ workflowId: source.workflowId, step });
    expect([step, await settled(forked.workflowId)]).toEqual([step, expect.objectContaining({ status: 'COMPLETED', answer: ANSWER })]);
  }
  const { workflowId, last } = source;
  for (const [step, message] of [
    [last, `step ${last} of ${workflowId} is COMPLETED: fork from an earlier step`],
    [last + 1, `step ${last + 1} is not in this run: it holds steps 0 to ${last}`],
    [-1, 'fromStep must be a step number (0 or more), got -1'],
  ] as const) {
    const r = await cli('fork', workflowId, '--from-step', String(step));
    expect([step, r.code, r.out, r.err]).toEqual([step, 1, '', `error: ${message}\n`]);
  }
});

test('gateway: POST /fork from every step starts a run that completes; the last, past it and -1 are refused', async () => {
  const { workflowId, last } = source;
  const started = [];
  for (const step of forkable()) started.push(await api('POST', `/v1/runs/${workflowId}/fork`, { fromStep: step }));
  for (const [step, r] of started.entries()) {
    expect([step, r.status]).toEqual([step, 201]);
    expect(r.body).toEqual({ workflowId: expect.any(String), runId: expect.any(String), forkedFrom: { workflowId, step } });
    expect(r.headers.location).toBe(`/v1/runs/${encodeURIComponent(r.body.workflowId)}`);
    expect([step, await settled(r.body.workflowId)]).toEqual([step, expect.objectContaining({ status: 'COMPLETED', answer: ANSWER })]);
  }
  const named = await api('POST', `/v1/runs/${workflowId}/fork`, { fromStep: 0, workflowId: `${workflowId}-again` });
  expect(named).toMatchObject({ status: 201, body: { workflowId: `${workflowId}-again` } });

  expect(await api('POST', `/v1/runs/${workflowId}/fork`, { fromStep: last })).toMatchObject({
    status: 400,
    body: { error: { code: 'invalid_input', message: `step ${last} of ${workflowId} is COMPLETED: fork from an earlier step` } },
  });
  expect(await api('POST', `/v1/runs/${workflowId}/fork`, { fromStep: last + 1 })).toMatchObject({
    status: 404,
    body: { error: { code: 'step_not_found', message: `step ${last + 1} is not in this run: it holds steps 0 to ${last}` } },
  });
  for (const body of [{ fromStep: -1 }, { fromStep: 1.5 }, {}, { fromStep: '2' }]) {
    const r = await api('POST', `/v1/runs/${workflowId}/fork`, body);
    expect([body, r.status, r.body.error.code, r.body.error.message]).toEqual([body, 400, 'invalid_input', expect.stringContaining('fromStep')]);
  }
  expect((await api('POST', '/v1/runs/no-such-run/fork', { fromStep: 0 })).body.error.code).toBe('run_not_found');
});

test('diff through the client, the CLI and the gateway: the tool step adds a message and a tool call, each with its path', async () => {
  const { workflowId, last } = source;
  const diff = await agents.handle(workflowId).diff(3, 4);
  expect(diff.changes).toEqual(
    expect.arrayContaining([
      { path: 'state', kind: 'changed', before: 'TOOL_EXECUTING', after: 'CRITIQUE' },
      { path: 'toolCalls', kind: 'changed', before: 0, after: 1 },
      { path: 'messages[3]', kind: 'added', after: expect.objectContaining({ role: 'tool', content: expect.stringContaining('Hello from the workspace') }) },
    ]),
  );
  expect((await api('GET', `/v1/runs/${workflowId}/diff?from=3&to=4`)).body).toEqual(JSON.parse(JSON.stringify(diff)));

  const text = await cli('diff', workflowId, '3', '4');
  expect(text.code).toBe(0);
  expect(text.out).toContain('step 3 -> step 4');
  expect(text.out).toContain('  state: "TOOL_EXECUTING" -> "CRITIQUE"');
  expect(text.out).toContain('  toolCalls: 0 -> 1');
  expect(text.out).toMatch(/\n {2}\+ messages\[3\]: \{"role":"tool","toolCallId":"[^"]+","content":"Hello from the workspace/);

  const missing = await api('GET', `/v1/runs/${workflowId}/diff?from=0&to=${last + 1}`);
  expect([missing.status, missing.body.error.code]).toEqual([404, 'step_not_found']);
  // Either end may be left out: `from` is then step 0, `to` the run's step now.
  expect((await api('GET', `/v1/runs/${workflowId}/diff?from=1`)).body).toMatchObject({ from: 1, to: last });
  expect((await api('GET', `/v1/runs/${workflowId}/diff?to=2`)).body).toMatchObject({ from: 0, to: 2 });
  for (const query of ['from=a&to=2', 'from=-1&to=2']) {
    const r = await api('GET', `/v1/runs/${workflowId}/diff?${query}`);
    expect([query, r.status, r.body.error.code]).toEqual([query, 400, 'invalid_input']);
  }
});

test('diff of a real run: the step that starts a third tool call shows that call, not two equal cut-off arrays', async () => {
  h.model.register('tt-many', ({ request }) => {
    const done = request.messages.filter((m: any) => m.role === 'tool').length;
    return done < 3 ? { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] } : { text: 'read three times' };
  });
  const run = await agents.start({ prompt: 'read hello.txt three times', model: 'tt-many', limits: { maxRepeats: 5 } });
  await run.result();
  const third = (await run.steps()).filter((s) => s.to === 'TOOL_EXECUTING')[2].step;
  const { code, out } = await cli('diff', run.workflowId, String(third - 1), String(third));
  expect(code).toBe(0);
  expect(out).toMatch(/\n {2}\+ recentToolCalls\[2\]: \{"toolCallId":"[^"]+","name":"readFile","arguments":"\{\\"path\\":\\"hello.txt\\"\}","startStep":\d+/);
  expect(out).not.toMatch(/\n {2}recentToolCalls: /);
});

describe('diffSnapshots and formatDiff (pure)', () => {
  const base = (): RunStateView => {
    const input = parseAgentRunInput({ prompt: 'p' });
    if (!input.ok) throw new Error(input.error);
    return publicView(initialSnapshot(input.value, '2026-01-01T10:00:00.000Z'), true);
  };
  const call = (n: number): ToolCallRecord => ({
    toolCallId: `call-${n}`,
    name: 'readFile',
    arguments: JSON.stringify({ path: `notes/${'long-name-'.repeat(4)}${n}.txt` }),
    startStep: 3 * n,
    startedAt: '2026-01-01T10:00:01.000Z',
    endStep: 3 * n + 1,
    endedAt: '2026-01-01T10:00:02.000Z',
    ok: true,
    output: 'x'.repeat(150),
  });

  test('the only difference an entry added at the end of a long array: that entry, with its path', () => {
    const calls = [1, 2, 3, 4, 5].map(call);
    const diff = diffSnapshots({ ...base(), recentToolCalls: calls }, { ...base(), recentToolCalls: [...calls, call(6)] });
    expect(diff.changes).toEqual([{ path: 'recentToolCalls[5]', kind: 'added', after: call(6) }]);
    expect(formatDiff(diff).split('\n')).toEqual(['step 0 -> step 0', `  + recentToolCalls[5]: ${JSON.stringify(call(6)).slice(0, 159)}…`]);
  });

  test('removed entries, nested changes and long strings show where they differ', () => {
    const a = { ...base(), recentToolCalls: [call(1), call(2)], partialText: `${'same '.repeat(60)}old ending` };
    const b = { ...base(), recentToolCalls: [{ ...call(1), ok: false }], partialText: `${'same '.repeat(60)}new ending`, usage: { ...a.usage, totalTokens: 7 } };
    const lines = formatDiff(diffSnapshots(a, b)).split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}partialText: …[a-z ]+ old ending" -> …[a-z ]+ new ending"$/));
    expect(lines).toContain('  recentToolCalls[0].ok: true -> false');
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}- recentToolCalls\[1\]: \{"toolCallId":"call-2"/));
    expect(lines).toContain('  usage.totalTokens: 0 -> 7');
    expect(formatDiff(diffSnapshots(base(), base()))).toBe('step 0 -> step 0\n  (no change)');
  });
});

test("a fork carries its own times: its steps after the fork point and a FORK transition that marks it; the original's steps keep theirs", async () => {
  const original = source.final.transitions;
  const since = Date.now();
  const fresh = await agents.fork(source.workflowId, 0);
  await settled(fresh.workflowId);
  const fromStart = await fresh.state();
  // From step 0 nothing of the original's time is carried: its start, the fork mark and all after are the fork's own.
  expect(fromStart.transitions.slice(0, 2)).toEqual([
    expect.objectContaining({ from: 'IDLE', to: original[0].to, event: 'START' }),
    expect.objectContaining({ from: original[0].to, to: original[0].to, event: 'FORK' }),
  ]);
  for (const t of fromStart.transitions) expect(Date.parse(t.at)).toBeGreaterThanOrEqual(since);

  const later = await agents.fork(source.workflowId, 2);
  await settled(later.workflowId);
  const fromTwo = await later.state();
  expect(fromTwo.transitions.slice(0, 2)).toEqual(original.slice(0, 2));
  expect(fromTwo.transitions[2]).toMatchObject({ from: original[1].to, to: original[1].to, event: 'FORK' });
  for (const t of fromTwo.transitions.slice(2)) expect(Date.parse(t.at)).toBeGreaterThanOrEqual(since);
  expect(fromTwo.origin).toEqual({ kind: 'fork', workflowId: source.workflowId, step: 2 });

  // The CLI's watch of a fork from step 0 prints the fork's own start, not the original's.
  const watchedSince = Date.now();
  const r = await cli('fork', source.workflowId, '--from-step', '0', '--watch');
  expect(r.code).toBe(0);
  const start = /(\d\d:\d\d:\d\d\.\d\d\d)\s+IDLE -> \w+ \(START\)/.exec(r.out);
  expect(start).not.toBeNull();
  const [hh, mm, ss] = start![1].split(':').map(Number);
  const at = new Date(watchedSince);
  at.setHours(hh, mm, 0, 0);
  expect(at.getTime() + ss * 1000).toBeGreaterThanOrEqual(watchedSince - 1);
  expect(r.out).toMatch(/-> \w+ \(FORK\)/);
}, 60_000);
