/**
 * Two real worker processes on one task queue share the runs, as `docker compose up --scale worker=2` does: both run
 * activities, and when one is killed with SIGKILL mid-way the other finishes every run. The workers share what the
 * compose replicas share: the workspace, the tool ledger and the claim-check blob store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { createDataConverter } from '../src/codec';
import { codecSettings } from '../src/config';
import { WORKFLOW_TYPE } from '../src/common/constants';
import type { AgentRunResult } from '../src/common/messages';
import { startScriptedModel, textOf, type ScriptedModel } from '../src/scripted-model';
import { UNKNOWN_OUTCOME } from '../src/activities/tools/ledger';
import { waitFor } from './support/agent-harness';
import { testServerAddress } from './support/temporal';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const ROOT = path.resolve(__dirname, '..');
const SCRIPT = 'two-workers';
const RUNS = 8;
/** How long the model takes to its first chunk: long enough for the test to see a call of worker b in flight. */
const FIRST_CHUNK_MS = 1_000;

let model: ScriptedModel;
let connection: Connection;
const workers: ChildProcess[] = [];
const output: string[] = [];
/** The workspace, ledger and blob store both workers share; removed at the end. */
const shared = mkdtempSync(path.join(os.tmpdir(), 'agent-two-workers-'));

beforeAll(async () => {
  model = await startScriptedModel();
  connection = await Connection.connect({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await connection?.close();
  await model?.close();
  rmSync(shared, { recursive: true, force: true });
});

/** Per run, the tool results that said their outcome is unknown (the kill stopped that call on worker b). */
const unknownOutcomes = new Map<string, number>();

/**
 * Tool results seen so far decide the step: write `run-N.txt`, read it back, then answer with what was read. The kill
 * may stop worker b inside another run's write: its retry is told the outcome is unknown (the tool ledger's
 * UNKNOWN_OUTCOME), and the model writes again, as a careful one would.
 */
function registerScript(): void {
  model.register(SCRIPT, ({ request }) => {
    const messages: any[] = request.messages;
    const run = /run (\d+)/.exec(messages.filter((m) => m.role === 'user').map((m) => textOf(m.content)).join('\n'))?.[1] ?? '';
    const results = messages.filter((m) => m.role === 'tool').map((m) => textOf(m.content));
    const known = results.filter((r) => !r.includes(UNKNOWN_OUTCOME));
    unknownOutcomes.set(run, Math.max(unknownOutcomes.get(run) ?? 0, results.length - known.length));
    const file = `run-${run}.txt`;
    const slow = { firstChunkDelayMs: FIRST_CHUNK_MS, chunkSize: 8, chunkDelayMs: 40 };
    if (known.length === 0) return { ...slow, toolCalls: [{ name: 'writeFile', arguments: { path: file, content: `payload of run ${run}` } }] };
    if (known.length === 1) return { ...slow, toolCalls: [{ name: 'readFile', arguments: { path: file } }] };
    return { ...slow, text: `run ${run} read back: ${known[known.length - 1]}` };
  });
}

/** The real worker entry point in its own process; resolves once it polls, so neither worker has a head start. */
async function startWorkerProcess(name: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  workers.push(child);
  let log = '';
  // Kept for the failure message rather than printed: a healthy worker is chatty.
  const keep = (d: Buffer) => {
    log += d.toString();
    output.push(`[${name}] ${d.toString()}`);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // Generous: each worker bundles the workflow code with webpack as it starts, and the two start at once.
  await waitFor(() => (log.includes('worker: polling task queue') ? true : undefined), 120_000, `worker ${name} to poll`).catch((err: unknown) => {
    throw new Error(`${String(err)}\n--- worker ${name} output ---\n${log.slice(-4_000)}`);
  });
  return child;
}

/** Identity, attempt and time of every ActivityTaskStarted event in the run's history (written once the attempt ends). */
async function activityStarts(handle: WorkflowHandle): Promise<Array<{ identity: string; attempt: number; at: number }>> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.activityTaskStartedEventAttributes)
    .map((e) => ({
      identity: e.activityTaskStartedEventAttributes!.identity ?? '',
      attempt: e.activityTaskStartedEventAttributes!.attempt ?? 1,
      at: Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6),
    }));
}

test('two worker processes share the runs, and one finishes them all after the other is killed', async () => {
  registerScript();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: testServerAddress(),
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_TASK_QUEUE: `two-workers-${randomUUID()}`,
    LLM_BASE_URL: model.url,
    LLM_API_KEY: 'x',
    LLM_MODEL: SCRIPT,
    AGENT_WORKSPACE: path.join(shared, 'workspace'),
    // One ledger for both, as compose replicas share the `agent-state` volume: a call retried on the other worker
    // finds what the first attempt recorded.
    AGENT_LEDGER: path.join(shared, 'tool-ledger.sqlite'),
    AGENT_BLOB_DIR: path.join(shared, 'blobs'),
    AGENT_CLAIM_CHECK: 'on',
    // Low enough that the conversation goes through the blob store, so a blob dir that is not shared would fail.
    AGENT_CLAIM_CHECK_THRESHOLD: '512',
  };
  // Each with a key of its own, so the scripted model knows whose call it answers.
  const [first, second] = await Promise.all([startWorkerProcess('a', { ...env, LLM_API_KEY: 'a' }), startWorkerProcess('b', { ...env, LLM_API_KEY: 'b' })]);
  const identityOf = (child: ChildProcess) => `${child.pid}@${os.hostname()}`;
  // Its log line comes before its polls reach the server. Both must be polling before the runs start: the first worker
  // to take a run's workflow task keeps the run (its sticky queue) and, by the server's eager dispatch, its model calls,
  // so a worker that polled late could get no call at all.
  await waitFor(
    async () => {
      for (const taskQueueType of [1, 2]) {
        const { pollers } = await connection.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: env.TEMPORAL_TASK_QUEUE! }, taskQueueType });
        const seen = new Set((pollers ?? []).map((p) => p.identity));
        if (![first, second].every((w) => seen.has(identityOf(w)))) return undefined;
      }
      return true;
    },
    60_000,
    'both workers to poll for workflow and activity tasks',
  );

  const client = new Client({ connection, dataConverter: createDataConverter(codecSettings(env)) });
  const startedAt = Date.now();
  const handles = await Promise.all(
    Array.from({ length: RUNS }, (_, i) =>
      client.workflow.start(WORKFLOW_TYPE, {
        taskQueue: env.TEMPORAL_TASK_QUEUE!,
        workflowId: `two-workers-${i}-${randomUUID()}`,
        args: [{ prompt: `This is run ${i}. Write your file and read it back.` }],
      }),
    ),
  );

  // Once every run has made its first call, and while a worker waits for the model: a call it made under 600 ms ago,
  // whose first chunk is still 400 ms away or more, so the kill interrupts work in flight. (Killing once the server
  // showed an activity started lost the race now and then: the activity could end between that answer and the kill.)
  // The window is wide because the scripted model shares this process's event loop with the test, which a busy
  // machine delays. Whichever worker holds that call is killed: the server may hand every run's first workflow task to
  // one worker, which then keeps the run (its sticky queue) and, by eager dispatch, its model calls.
  await waitFor(() => (model.requests(SCRIPT).filter((r) => r.completed && r.receivedAt >= startedAt).length >= RUNS ? true : undefined), 60_000, 'every run\'s first model call');
  const fresh = () => model.requests(SCRIPT).filter((r) => !r.completed && Date.now() - r.receivedAt < FIRST_CHUNK_MS - 400);
  const holder = await waitFor(
    () => (fresh().some((r) => r.apiKey === 'b') ? 'b' : fresh().some((r) => r.apiKey === 'a') ? 'a' : undefined),
    30_000,
    'a model call in flight',
  ).catch((err: unknown) => {
    const calls = model.requests(SCRIPT).map((r) => `worker ${r.apiKey}, ${r.completed ? 'answered' : 'open'}, ${Date.now() - r.receivedAt} ms ago`);
    throw new Error(`${String(err)}\n--- model calls ---\n${calls.join('\n')}\n--- worker output ---\n${output.join('').slice(-4_000)}`);
  });
  const [victim, survivor] = holder === 'b' ? [second, first] : [first, second];
  victim.kill('SIGKILL');
  await waitFor(() => (victim.signalCode === 'SIGKILL' ? true : undefined), 5_000, `worker ${holder} to die`);
  const killedAt = Date.now();

  const results: AgentRunResult[] = await Promise.all(handles.map((h) => h.result())).catch((err: unknown) => {
    throw new Error(`${String(err)}\n--- worker output ---\n${output.join('').slice(-6_000)}`);
  });
  results.forEach((result, i) => {
    // A write, a read, and a write again for each call whose outcome the kill left unknown.
    expect(result).toMatchObject({ status: 'COMPLETED', toolCalls: 2 + (unknownOutcomes.get(String(i)) ?? 0) });
    expect(result.answer).toContain(`run ${i} read back: payload of run ${i}`);
    expect(readFileSync(path.join(env.AGENT_WORKSPACE!, `run-${i}.txt`), 'utf8')).toBe(`payload of run ${i}`);
  });

  const starts = (await Promise.all(handles.map(activityStarts))).flat();
  const byWorker = (child: ChildProcess) => starts.filter((s) => s.identity === identityOf(child));
  // Both workers ran activities (the victim, the earlier calls of the runs it held; a killed attempt is not in history,
  // only the one that ended), and every activity is accounted for by one of them.
  expect(byWorker(victim).length).toBeGreaterThan(0);
  expect(byWorker(survivor).length).toBeGreaterThan(0);
  expect(byWorker(victim).length + byWorker(survivor).length).toBe(starts.length);
  // After the kill only the survivor worked (the server clock may lead ours by a little).
  expect(byWorker(victim).every((s) => s.at <= killedAt + 1_000)).toBe(true);
  expect(byWorker(survivor).some((s) => s.at > killedAt)).toBe(true);
  // The activity the kill interrupted was retried, and the survivor finished it.
  expect(byWorker(survivor).some((s) => s.attempt > 1)).toBe(true);
  // The conversation went through the shared blob store.
  expect(readdirSync(env.AGENT_BLOB_DIR!).length).toBeGreaterThan(0);
}, 240_000);
