/** The offline demo model (`scripted-demo`) in the approval demo, on a real worker and dev server, steered from the CLI. */
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { DEMO_SCRIPT_NAME } from '../src/scripted-model/server';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness({ 'hello.txt': 'Hello from the workspace\n', 'other.txt': 'Another file\n' });
}, 120_000);
afterAll(async () => h?.close());

const cli = async (...argv: string[]) => {
  let out = '';
  const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (out += t) });
  return { code, out };
};

/** A demo run whose readFile waits for approval; resolves with its id and the call waiting. */
async function waitingRead(): Promise<{ id: string; callId: string }> {
  const run = await h.start({ prompt: 'What is in the workspace?', model: DEMO_SCRIPT_NAME, approval: { tools: ['readFile'] } });
  const state = await h.waitForState(run, (s) => s.state === 'AWAITING_APPROVAL');
  expect(state.pendingApproval.map((p) => [p.name, JSON.parse(p.arguments)])).toEqual([['readFile', { path: 'hello.txt' }]]);
  return { id: run.workflowId, callId: state.pendingApproval[0].toolCallId };
}

const answerOf = async (id: string) => (await new AgentClient(h.env.client, h.taskQueue).handle(id).result()).answer;

test('a rejected read: the demo says it was rejected, not that it read the file', async () => {
  const { id, callId } = await waitingRead();
  expect((await cli('approve', id, callId, '--reject', '--feedback', 'not that one')).code).toBe(0);
  const answer = await answerOf(id);
  expect(answer).toBe('You rejected my readFile of hello.txt ("not that one"), so I did not run it and have nothing more to report.');
}, 60_000);

test('a read approved with edited arguments: the demo names the file that was read', async () => {
  const { id, callId } = await waitingRead();
  expect((await cli('approve', id, callId, '--arguments', '{"path":"other.txt"}')).code).toBe(0);
  expect(await answerOf(id)).toBe('I read other.txt. Its first line is "Another file" and it is 13 characters long.');
}, 60_000);
