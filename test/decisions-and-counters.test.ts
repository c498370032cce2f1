/**
 * What a person decided reaches the model, and counters count what happened, on the real dev server through the
 * client, the CLI and the gateway: approval feedback and edited arguments arrive in one user message after the
 * turn's tool results (tool messages stay the tool's output, byte for byte); a run refused for unknown tools counts
 * no model call and says which tools; a run refused for bad input shows no limits; `result` names loops as loops.
 */
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { buildGateway } from '../src/gateway/index';
import { APPROVAL_NOTE_HEAD } from '../src/machine/machine';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { failureOf } from './support/failures';

const TOKEN = 't';
let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;

beforeAll(async () => {
  h = await startAgentHarness({ 'hello.txt': 'Hello from the workspace\nsecond line\n' });
  agents = new AgentClient(h.env.client, h.taskQueue);
  app = buildGateway({ agents, token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100 });
}, 120_000);
afterAll(async () => {
  await app?.close();
  await h?.close();
});

async function cli(argv: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await runCli(argv, { connect: async () => agents, out: (t) => (out += t), err: (t) => (out += t) });
  return { code, out };
}

const gateway = async (method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${TOKEN}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
};

type Sent = Array<{ role: string; content?: string | null; tool_call_id?: string }>;
/** The messages the model was sent in the script's call `index`. */
const sent = (script: string, index: number): Sent => h.model.requests(script)[index].body.messages as Sent;

/** Two guarded calls (an edit and a rejection) and one read, then an answer. */
function registerTwoWrites(name: string): void {
  h.model.register(name, ({ callIndex }) =>
    callIndex === 0
      ? {
          toolCalls: [
            { id: 'w1', name: 'writeFile', arguments: { path: `${name}-model.txt`, content: 'from the model' } },
            { id: 'w2', name: 'writeFile', arguments: { path: `${name}-other.txt`, content: 'other' } },
            { id: 'r1', name: 'readFile', arguments: { path: 'hello.txt' } },
          ],
        }
      : { text: 'done' },
  );
}

test('edited arguments and feedback reach the model in one user message after the tool results; the file read stays byte-exact', async () => {
  registerTwoWrites('decided');
  const handle = await h.start({ prompt: 'Write two files and read one', model: 'decided', approval: { tools: ['writeFile'] } });
  await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  const run = agents.handle(handle.workflowId);
  const edit = { path: 'decided-person.txt', content: 'from a person' };
  await run.approve({ toolCallId: 'w1', approved: true, feedback: 'wrong file name', arguments: edit });
  await run.approve({ toolCallId: 'w2', approved: false, feedback: 'no second file' });
  expect(await run.result()).toMatchObject({ status: 'COMPLETED', answer: 'done' });

  const messages = sent('decided', 1);
  const afterAssistant = messages.slice(messages.findIndex((m) => m.role === 'assistant') + 1);
  expect(afterAssistant).toEqual([
    { role: 'tool', tool_call_id: 'w1', content: 'wrote 13 bytes to decided-person.txt' },
    { role: 'tool', tool_call_id: 'w2', content: 'The user rejected this call.' },
    { role: 'tool', tool_call_id: 'r1', content: 'Hello from the workspace\nsecond line\n' },
    {
      role: 'user',
      content: `${APPROVAL_NOTE_HEAD}\n- writeFile (call w1): approved with edited arguments; it ran with ${JSON.stringify(edit)}. Feedback: wrong file name\n- writeFile (call w2): rejected. Feedback: no second file`,
    },
  ]);
}, 60_000);

test("an approval's feedback given through the CLI and the gateway reaches the model", async () => {
  for (const via of ['cli', 'gateway'] as const) {
    const script = `feedback-${via}`;
    h.model.register(script, ({ callIndex }) =>
      callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: `${script}.txt`, content: 'hi' } }] } : { text: 'ok' },
    );
    const handle = await h.start({ prompt: 'Write it', model: script, approval: { tools: ['writeFile'] } });
    await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
    if (via === 'cli') expect((await cli(['approve', handle.workflowId, 'w1', '--feedback', `keep it short (${via})`])).code).toBe(0);
    else expect((await gateway('POST', `/v1/runs/${handle.workflowId}/approvals`, { toolCallId: 'w1', approved: true, feedback: `keep it short (${via})` })).status).toBe(200);
    await handle.result();
    expect(sent(script, 1).slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'w1', content: `wrote 2 bytes to ${script}.txt` },
      { role: 'user', content: `${APPROVAL_NOTE_HEAD}\n- writeFile (call w1): approved. Feedback: keep it short (${via})` },
    ]);
  }
}, 60_000);

test('a run refused for unknown tools counts no model call and names the tools: client, CLI and gateway', async () => {
  h.model.register('never-called', [{ text: 'unreachable' }]);
  const handle = await h.start({ prompt: 'Use it', model: 'never-called', tools: ['bogusTool', 'readFile'] });
  const failure = await failureOf(handle.result());
  expect(failure.message).toMatch(/^no model call was made: unknown tools: bogusTool; this worker has: /);
  expect(h.model.requests('never-called')).toEqual([]);

  const view = await agents.handle(handle.workflowId).state();
  expect(view).toMatchObject({ state: 'FAILED', loops: 0, stream: null, usage: expect.objectContaining({ modelCalls: 0 }) });
  expect(view.transitions.at(-1)).toMatchObject({ from: 'STREAMING', to: 'FAILED', event: 'UNKNOWN_TOOLS' });

  const state = await cli(['state', handle.workflowId]);
  expect(state.out).toContain('  model calls 0, loops 0/50, tool calls 0/100,');
  expect(state.out).toContain('  reason: no model call was made: unknown tools: bogusTool;');
  expect(state.out).not.toContain('model call failed');
  const result = await cli(['result', handle.workflowId]);
  expect([result.code, result.out.split('\n').slice(0, 2)]).toEqual([1, [expect.stringMatching(/^FAILED: no model call was made: unknown tools: bogusTool;/), '  model calls 0, loops 0, tool calls 0, tokens 0']]);

  expect((await gateway('GET', `/v1/runs/${handle.workflowId}`)).body).toMatchObject({ loops: 0, usage: expect.objectContaining({ modelCalls: 0 }), reason: failure.message });
}, 60_000);

test('a run refused for bad input shows no limits, not placeholders', async () => {
  const handle = await h.start({ prompt: '' });
  await failureOf(handle.result());
  const { out } = await cli(['state', handle.workflowId]);
  expect(out).toContain('  model calls 0, loops 0, tool calls 0, tokens 0, messages 2 (input refused: no limits applied)');
  expect(out).not.toMatch(/\d\/\d/);
}, 60_000);

test('`result` prints answered model calls as model calls and the maxLoops counter as loops', async () => {
  // The second call never answers: the run is aborted while it streams, after one answered call in two begun.
  h.model.register('half-answered', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }] } : { text: 'x'.repeat(400), chunkSize: 2, chunkDelayMs: 100 },
  );
  const handle = await h.start({ prompt: 'List, then talk', model: 'half-answered' });
  await h.waitForState(handle, (s) => s.state === 'STREAMING' && s.loops === 2 && s.partialText.length > 0);
  await agents.handle(handle.workflowId).abort('enough');
  const { out } = await cli(['result', handle.workflowId]);
  expect(out.split('\n').slice(0, 2)).toEqual(['ABORTED: aborted: enough', expect.stringMatching(/^ {2}model calls 1, loops 2, tool calls 1, tokens \d+$/)]);
  const view = await agents.handle(handle.workflowId).state();
  expect([view.usage.modelCalls, view.loops]).toEqual([1, 2]);
}, 60_000);
