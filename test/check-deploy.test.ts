/** `checkDeploy` and `agent check-deploy` on the real server: open runs replayed against the code about to be deployed. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { checkDeploy } from '../src/worker/check-deploy';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { testServerAddress } from './support/temporal';

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const CHANGED = path.join(__dirname, 'fixtures', 'changed-workflows.ts');

test('a waiting run replays with today\'s code, and not with a change that would break it', async () => {
  h.model.register('deploy-wait', [{ toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'd.txt', content: 'd' } }] }]);
  const waiting = await h.start({ prompt: 'write', model: 'deploy-wait', approval: { tools: ['writeFile'] } });
  await h.waitForState(waiting, (s) => s.state === 'AWAITING_APPROVAL');
  const mine = `TaskQueue="${h.taskQueue}"`;

  const same = await checkDeploy({ client: h.env.client, workflows: { workflowBundle: h.bundle }, query: mine });
  expect(same.checked.map((r) => r.workflowId)).toContain(waiting.workflowId);
  expect(same.failures).toEqual([]);

  const changed = await checkDeploy({ client: h.env.client, workflows: { workflowsPath: CHANGED }, query: mine });
  expect(changed.failures).toEqual([{ workflowId: waiting.workflowId, runId: expect.any(String), error: expect.stringMatching(/nondetermin/i) }]);

  let out = '';
  const cli = (...argv: string[]) => runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (out += t) });
  expect(await cli('check-deploy', '--workflows', CHANGED, '--query', mine)).toBe(1);
  expect(out).toContain(`replayed 1 run(s): 1 would fail`);
  expect(out).toContain(waiting.workflowId);

  // As a person runs it: the verdict is what the terminal shows, not webpack's report and the replay worker's states.
  const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/bin/agent.ts', 'check-deploy', '--workflows', CHANGED, '--query', mine], {
    cwd: path.resolve(__dirname, '..'),
    env: { ...process.env, TEMPORAL_ADDRESS: testServerAddress() },
  });
  const failed = await run.then(() => undefined, (err: { code: number; stdout: string; stderr: string }) => err);
  expect(failed?.code).toBe(1);
  expect(failed?.stdout.trim().split('\n')).toEqual(['replayed 1 run(s): 1 would fail', expect.stringContaining(waiting.workflowId)]);
  expect(failed?.stderr).toBe('');
}, 120_000);
