/**
 * A control the run refuses is reported as refused, and nothing is recorded: the client rejects with
 * `AgentUpdateRejectedError`, the CLI exits 1 naming why, the gateway answers 409 `update_rejected`.
 */
import { runCli } from '../src/cli/cli';
import { AgentClient, AgentRunEndedError, AgentRunFailedError, AgentUpdateRejectedError, runFailure } from '../src/client';
import { buildGateway, openApiDocument } from '../src/gateway/index';
import { PAUSE_NOT_APPLIED } from '../src/machine/machine';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

test('pause, resume and abort answer where the run stands, and a refusal is an error everywhere', async () => {
  h.model.register('control-stall', [{ text: 'thinking about it', chunkSize: 4, stallAfterChunks: 1 }]);
  const client = new AgentClient(h.env.client, h.taskQueue);
  const run = await client.start({ prompt: 'wait', model: 'control-stall' });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.state === 'STREAMING' && s.partialText.length > 0);

  let out = '';
  let err = '';
  const cli = async (...argv: string[]) => {
    [out, err] = ['', ''];
    return runCli(argv, { connect: async () => client, out: (t) => (out += t), err: (t) => (err += t) });
  };
  const app = buildGateway({ agents: client, token: 't' });
  const post = async (control: string) => {
    const res = await app.inject({ method: 'POST', url: `/v1/runs/${run.workflowId}/${control}`, headers: { authorization: 'Bearer t' } });
    return { status: res.statusCode, body: res.json() };
  };

  // Accepted: the answer says where the run stands.
  expect(await run.pause()).toEqual({ state: 'STREAMING', pauseRequested: true });
  // Refused by the machine: a typed error with the run's reason, from the client, the CLI and the gateway alike.
  const twice = run.pause();
  await expect(twice).rejects.toBeInstanceOf(AgentUpdateRejectedError);
  await expect(twice).rejects.toMatchObject({ update: 'pause', reason: 'a pause is already requested', message: 'pause refused: a pause is already requested' });
  expect([await cli('pause', run.workflowId), out, err]).toEqual([1, '', 'error: pause refused: a pause is already requested\n']);
  expect(await post('pause')).toEqual({ status: 409, body: { error: { code: 'update_rejected', message: 'a pause is already requested', update: 'pause' } } });

  expect([await cli('resume', run.workflowId), out]).toEqual([0, `resume accepted by ${run.workflowId}: STREAMING\n`]);
  await expect(run.resume()).rejects.toThrow('resume refused: the run is STREAMING, not paused');
  expect(await post('resume')).toMatchObject({ status: 409, body: { error: { code: 'update_rejected', message: 'the run is STREAMING, not paused' } } });
  expect(await post('pause')).toEqual({
    status: 202,
    body: { workflowId: run.workflowId, signal: 'pause', sent: true, state: 'STREAMING', pauseRequested: true },
  });
  // A refused update never reaches the run's history or its state.
  expect((await run.state()).rejectedEvents).toEqual([]);

  expect([await cli('abort', run.workflowId, '--reason', 'enough', '--json'), JSON.parse(out)]).toEqual([
    0,
    { workflowId: run.workflowId, signal: 'abort', sent: true, state: 'ABORTED', pauseRequested: false },
  ]);
  await expect(run.abort()).rejects.toBeInstanceOf(AgentRunEndedError);
  expect(await post('abort')).toMatchObject({ status: 409, body: { error: { code: 'run_ended' } } });
  await app.close();

  const doc = openApiDocument() as { paths: Record<string, { post: { responses: Record<string, unknown> } }> };
  for (const path of ['abort', 'pause', 'resume', 'approvals', 'messages']) {
    expect(Object.keys(doc.paths[`/v1/runs/{id}/${path}`].post.responses)).toEqual(expect.arrayContaining(['409', '504']));
  }
}, 60_000);

test('an abort while text streams in ends the run, though the server drops a workflow task that would close it over new signals', async () => {
  h.model.register('control-chatty', () => ({ text: 'One more sentence about durable agents. '.repeat(60), chunkSize: 8, chunkDelayMs: 20 }));
  const client = new AgentClient(h.env.client, h.taskQueue);
  // Text arrives every 100 ms: about one abort in two meets the server's UnhandledCommand, and the client sends it again.
  for (let i = 0; i < 4; i++) {
    const run = await client.start({ prompt: 'talk', model: 'control-chatty' });
    await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.partialText.length > 40);
    expect(await run.abort('enough')).toEqual({ state: 'ABORTED', pauseRequested: false });
    expect(await run.result()).toMatchObject({ status: 'ABORTED', reason: 'aborted: enough' });
  }
}, 90_000);

test('a pause accepted during the final model call is not dropped without a word: the result and rejectedEvents say it was not applied', async () => {
  h.model.register('control-last-call', [{ text: 'The final answer, slowly. '.repeat(4), chunkSize: 4, chunkDelayMs: 60 }]);
  const client = new AgentClient(h.env.client, h.taskQueue);
  const run = await client.start({ prompt: 'answer', model: 'control-last-call' });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.state === 'STREAMING' && s.partialText.length > 0);
  let out = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => client, out: (t) => (out += t), err: (t) => (out += t) });
  expect(await cli('pause', run.workflowId)).toBe(0);
  expect(out).toContain('pause requested');

  const result = await run.result();
  expect(result).toMatchObject({ status: 'COMPLETED', reason: expect.stringContaining(PAUSE_NOT_APPLIED) });
  const state = await run.state();
  expect(state.rejectedEvents).toEqual([expect.objectContaining({ event: 'PAUSE', error: `${PAUSE_NOT_APPLIED} (COMPLETED)` })]);
  const app = buildGateway({ agents: client, token: 't' });
  const res = await app.inject({ method: 'GET', url: `/v1/runs/${run.workflowId}/result`, headers: { authorization: 'Bearer t' } });
  expect(res.json()).toMatchObject({ status: 'COMPLETED', reason: expect.stringContaining(PAUSE_NOT_APPLIED) });
}, 60_000);

test("the client's result() of a failed run rejects with the run's reason in its message and as typed fields", async () => {
  h.model.register('control-fails', () => ({ toolCalls: [{ name: 'listFiles', arguments: {} }] }));
  const client = new AgentClient(h.env.client, h.taskQueue);
  const run = await client.start({ prompt: 'loop', model: 'control-fails', limits: { maxLoops: 1 } });
  const err = await run.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  const { reason } = await run.state();
  expect(reason).toMatch(/loop limit reached/);
  expect(err).toBeInstanceOf(AgentRunFailedError);
  expect(err).toMatchObject({ name: 'AgentRunFailedError', workflowId: run.workflowId, reason, type: 'AgentRunFailed', message: `agent run ${run.workflowId} failed: ${reason}` });
  expect((err as AgentRunFailedError).result).toMatchObject({ loops: 1 });
  expect(runFailure(err)).toMatchObject({ reason, type: 'AgentRunFailed' });
}, 30_000);
