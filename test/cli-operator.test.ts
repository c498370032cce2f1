/** The CLI as an operator runs it, on the real server: the process's exit, the flags' names in errors, the list's filters. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { runCli } from '../src/client/cli';
import { AgentClient } from '../src/client';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
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
