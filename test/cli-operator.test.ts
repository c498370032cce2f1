/** The CLI as an operator runs it, on the real server: the process's exit, the flags' names in errors, the list's filters. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { testServerAddress } from './support/temporal';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const ROOT = path.resolve(__dirname, '..');

/** The CLI process; `closeStdout`: its reader is gone before it writes (`agent ... | head -2` once head has its lines). */
function agentProcess(argv: string[], closeStdout = false): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/agent.ts', ...argv], {
    cwd: ROOT,
    env: { ...process.env, TEMPORAL_ADDRESS: testServerAddress(), TEMPORAL_TASK_QUEUE: h.taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  if (closeStdout) child.stdout.destroy();
  else child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The CLI in this process, with the harness's client. */
async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('a closed stdout ends the CLI quietly with exit 0', () => {
  test('history of a run, and a command that needs no server', async () => {
    h.model.register('cli-epipe', [{ text: 'done' }]);
    const run = await h.start({ prompt: 'p', model: 'cli-epipe' });
    await run.result();
    expect((await cli('history', run.workflowId)).code).toBe(0);
    for (const argv of [['history', run.workflowId], ['graph'], ['--help']]) {
      expect([argv, await agentProcess(argv, true)]).toEqual([argv, { code: 0, stdout: '', stderr: '' }]);
    }
  }, 60_000);
});

describe('errors name the flags typed', () => {
  test('an approval setting without --approve-tools names both flags, not the field approval.tools', async () => {
    const { code, out, err } = await cli('start', 'hi', '--approval-reminder-at', '2');
    expect([code, out]).toEqual([1, '']);
    expect(err).toBe('error: --approval-reminder-at needs --approve-tools: the tools whose calls wait for approval\n');
    const range = await cli('start', 'hi', '--approve-tools', 'writeFile', '--approval-timeout-ms', '60000', '--approval-reminder-at', '2');
    expect(range.err).toBe('error: --approval-reminder-at (approval.reminderAt): Too big: expected number to be <1\n');
    expect((await cli('start', 'hi', '--approval-reminder-at', 'soon')).err).not.toContain('NaN');
  });

  test("check-deploy --query that Temporal refuses: the flag and the query as typed, no position in the query built around it", async () => {
    const { code, err } = await cli('check-deploy', '--query', 'foo bar');
    expect(code).toBe(1);
    expect(err).toMatch(/^error: --query "foo bar": not a visibility query the server accepts: .*near 'bar'\n$/);
    expect(err).not.toMatch(/position/);
  }, 60_000);
});

describe('rough edges', () => {
  test('agent help start prints the help of start', async () => {
    const { code, out } = await cli('help', 'start');
    expect(code).toBe(0);
    expect(out).toContain('Usage: agent start [options] <prompt>');
    expect(out).toContain('--keep-open-ms');
  });

  test('list --state takes the state in any case', async () => {
    h.model.register('cli-case', [{ text: 'done' }]);
    const run = await h.start({ prompt: 'p', model: 'cli-case' });
    await run.result();
    const listed = await waitFor(async () => {
      const { code, out } = await cli('list', '--state', 'completed', '--limit', '200', '--json');
      return code === 0 && out.includes(run.workflowId) ? out : undefined;
    }, 15_000, 'the run listed as completed');
    expect(JSON.parse(listed).every((r: { agentState: string }) => r.agentState === 'COMPLETED')).toBe(true);
  }, 30_000);

  test("list takes the gateway's search: --q, --agent, --since, --until; a bad time is refused naming the flag", async () => {
    h.model.register('cli-search', [{ text: 'done' }, { text: 'done' }]);
    const agents = new AgentClient(h.env.client, h.taskQueue);
    const token = `needle-${Date.now()}`;
    const found = await agents.start({ prompt: `Find the ${token} here`, model: 'cli-search' });
    const other = await agents.start({ prompt: 'Nothing to see', model: 'cli-search' });
    await Promise.all([found.result(), other.result()]);
    const listed = await waitFor(async () => {
      const { code, out } = await cli('list', '--q', token.toUpperCase(), '--json');
      return code === 0 && out.includes(found.workflowId) ? out : undefined;
    }, 15_000, 'the run found by its prompt');
    expect(JSON.parse(listed).map((r: { workflowId: string; prompt: string }) => [r.workflowId, r.prompt])).toEqual([[found.workflowId, `Find the ${token} here`]]);
    const human = await cli('list', '--q', token, '--since', new Date(Date.now() - 3_600_000).toISOString());
    expect(human.out).toMatch(new RegExp(`^WORKFLOW ID +AGENT STATE +EXECUTION +STARTED\n${found.workflowId} +COMPLETED +COMPLETED `));
    expect((await cli('list', '--q', token, '--until', '2000-01-01T00:00:00Z')).out).toBe('no agent runs\n');
    expect((await cli('list', '--q', token, '--agent', 'nobody')).out).toBe('no agent runs\n');
    const bad = await cli('list', '--since', 'yesterday');
    expect([bad.code, bad.err]).toEqual([1, "error: option '--since <time>' argument 'yesterday' is invalid. expected an ISO 8601 time, e.g. 2026-12-01T09:00:00Z\n"]);
  }, 30_000);

  test('start --keep-open-ms keeps the conversation open; send to it says the run took the message; history prints step 0', async () => {
    h.model.register('cli-open', ({ callIndex }) => ({ text: callIndex === 0 ? 'first answer' : 'second answer' }));
    const started = await cli('start', 'hi', '--model', 'cli-open', '--keep-open-ms', '60000', '--json');
    expect(started.code).toBe(0);
    const { workflowId } = JSON.parse(started.out) as { workflowId: string };
    const handle = new AgentClient(h.env.client, h.taskQueue).handle(workflowId);
    await waitFor(async () => ((await handle.state({})).conversationOpen ? true : undefined), 20_000, 'the conversation open');
    const sent = await cli('send', workflowId, 'and then?');
    expect(sent).toEqual({ code: 0, out: 'message taken: the model reads it in its next call, which starts now\n', err: '' });
    const history = await cli('history', workflowId);
    expect(history.out.split('\n')[0]).toMatch(/^ {3}0 {2}\d\d:\d\d:\d\d\.\d{3} {2}the run before its start/);
    expect(history.out.split('\n')[1]).toMatch(/^ {3}1 .*IDLE -> /);
    await handle.abort('test over').catch(() => undefined);
  }, 60_000);

  test('start --max-tokens sets the budget: a run that cannot afford its first call fails with the budget named', async () => {
    h.model.register('cli-budget', [{ text: 'never' }]);
    const run = await cli('start', 'hi', '--model', 'cli-budget', '--max-tokens', '1', '--watch');
    expect(run.code).toBe(1);
    expect(run.out).toMatch(/FAILED: .*budget/i);
  }, 60_000);
});

test('check-deploy names each run it replayed, not only how many', async () => {
  h.model.register('cli-deploy-wait', [{ toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'd.txt', content: 'd' } }] }]);
  const waiting = await h.start({ prompt: 'write', model: 'cli-deploy-wait', approval: { tools: ['writeFile'] } });
  await h.waitForState(waiting, (s) => s.state === 'AWAITING_APPROVAL');
  const { code, out } = await cli('check-deploy', '--query', `TaskQueue="${h.taskQueue}" AND WorkflowId="${waiting.workflowId}"`);
  expect(code).toBe(0);
  const { runId } = await waiting.describe();
  expect(out.trim().split('\n')).toEqual(['replayed 1 run(s): all replay with this code', `  ok     ${waiting.workflowId} (${runId})`]);
  await waiting.terminate('test over');
}, 120_000);
