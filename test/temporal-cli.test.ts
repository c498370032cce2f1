/** The plain `temporal` CLI drives a run: start, query, signal, and list by the AgentState search attribute. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { testServerAddress } from './support/temporal';

const exec = promisify(execFile);
let h: AgentHarness;
let cli: string;

beforeAll(async () => {
  [h, cli] = await Promise.all([startAgentHarness(), ensureTemporalCli({ quiet: true })]);
}, 120_000);
afterAll(async () => h?.close());

async function temporal(...args: string[]): Promise<any> {
  const { stdout } = await exec(cli, [...args, '--address', testServerAddress(), '--output', 'json']);
  return stdout.trim() ? JSON.parse(stdout) : null;
}

test('start, query, list by AgentState and abort with the plain temporal CLI', async () => {
  h.model.register('cli-answer', [{ text: 'answered for the CLI' }]);
  h.model.register('cli-slow', [{ text: 'z'.repeat(1_000), chunkSize: 1, chunkDelayMs: 50 }]);
  const id = `cli-${Date.now()}`;
  await temporal('workflow', 'start', '--type', 'agentRun', '--task-queue', h.taskQueue, '--workflow-id', id, '--input', '{"prompt":"hello","model":"cli-answer"}');
  await temporal('workflow', 'result', '--workflow-id', id);

  const query = await temporal('workflow', 'query', '--workflow-id', id, '--type', 'state');
  expect(query.queryResult[0]).toMatchObject({ state: 'COMPLETED', answer: 'answered for the CLI' });

  const listed = await waitFor(async () => {
    const rows: any[] = (await temporal('workflow', 'list', '--query', `AgentState="COMPLETED" AND WorkflowId="${id}"`)) ?? [];
    return rows.length === 1 ? rows : undefined;
  }, 15_000, 'the run in the visibility list');
  expect(listed[0].execution.workflowId).toBe(id);

  const slow = `cli-slow-${Date.now()}`;
  await temporal('workflow', 'start', '--type', 'agentRun', '--task-queue', h.taskQueue, '--workflow-id', slow, '--input', '{"prompt":"talk","model":"cli-slow"}');
  // Streamed text is in the model call's heartbeat details, not the state query, while it streams (issue 49).
  const beating = async () => JSON.stringify((await temporal('workflow', 'describe', '--workflow-id', slow)).pendingActivities ?? []).includes('heartbeatDetails');
  await waitFor(async () => ((await beating()) ? true : undefined), 20_000, 'streaming');
  await temporal('workflow', 'signal', '--workflow-id', slow, '--name', 'abort', '--input', '{"reason":"from the CLI"}');
  const result = await temporal('workflow', 'result', '--workflow-id', slow);
  expect(JSON.stringify(result)).toContain('aborted: from the CLI');
});
