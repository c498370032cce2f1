/**
 * Issue 24's reconnect goal: a long answer streamed through Redis and the gateway's SSE, the worker killed with
 * kill -9 in the middle of it and a second one taking over; meanwhile readers reconnect with `Last-Event-ID` at
 * random points, 1,000 times in all. Every reader ends with exactly the final answer, having received each of its
 * characters once: the retried call re-attached to the streamed text (a `resume`), instead of sending it again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../src/client';
import { followText, type CallText, type StreamEvent } from '../src/common/stream';
import { buildGateway } from '../src/gateway/index';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { RedisChannel, START } from '../src/stream';
import { CONTINUE_PROMPT } from '../src/machine/responses';
import { sleep, waitFor } from './support/agent-harness';
import { freePort, startRedis } from './support/redis';
import { readSse } from './support/sse';
import { testServerAddress } from './support/temporal';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const ROOT = path.resolve(__dirname, '..');
const TOKEN = 'reconnect-token';
const RECONNECTS = 1_000;
const READERS = 8;
/**
 * Alone the test takes about 30 s; on a loaded machine (the full suite on 2 cores) each of its two worker processes
 * takes much longer to start, and the takeover waits for the killed call's heartbeat timeout.
 */
const RESULT_WAIT_MS = 180_000;
const ANSWER = Array.from({ length: 500 }, (_, i) => `w${i}`).join(' ') + '.';

let model: ScriptedModel;
let env: TestWorkflowEnvironment;
let redis: ChildProcess;
let redisUrl: string;
let channel: RedisChannel;
let app: FastifyInstance;
let baseUrl: string;
const workers: ChildProcess[] = [];
const output: string[] = [];
const taskQueue = `reconnect-${randomUUID()}`;

beforeAll(async () => {
  const port = await freePort();
  redis = await startRedis(port);
  redisUrl = `redis://127.0.0.1:${port}`;
  channel = RedisChannel.open({ url: redisUrl });
  await channel.ready;
  model = await startScriptedModel();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
  app = buildGateway({ agents: new AgentClient(env.client, taskQueue), token: TOKEN, heartbeatMs: 200, pollIntervalMs: 100, stream: channel });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
  await app?.close();
  await channel?.close();
  await env?.teardown();
  await model?.close();
  redis?.kill();
});

/** The real worker entry point in its own process, publishing to Redis, so it can be killed for real. */
function startWorkerProcess(workspace: string, ledger: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: testServerAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      LLM_BASE_URL: model.url,
      LLM_API_KEY: 'scripted',
      LLM_MODEL: 'reconnect',
      AGENT_WORKSPACE: workspace,
      AGENT_LEDGER: ledger,
      AGENT_STREAM_REDIS_URL: redisUrl,
      AGENT_STREAM_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  workers.push(child);
  return child;
}

/** What one reader got, from its first connection to the run's `end`. */
interface Pass {
  /** Every text delta of the answer's call, as received: a character sent twice shows here twice. */
  received: string;
  /** The call's text as the reader shows it (restart and resume honoured). */
  shown: CallText | undefined;
  answer: string | null;
  joins: Array<'restart' | 'resume'>;
  gaps: number;
}

let connections = 0;
let connectionsWhileRunning = 0;
let ended = false;

/** Reads the run from the start to its end, reconnecting with Last-Event-ID after 1 to 4 events each time. */
async function readPass(id: string): Promise<Pass> {
  const calls = new Map<number, CallText>();
  const pass: Pass = { received: '', shown: undefined, answer: null, joins: [], gaps: 0 };
  let lastId: string | undefined;
  let callNumber = 0;
  for (;;) {
    const res = await fetch(`${baseUrl}/v1/runs/${id}/events`, { headers: { authorization: `Bearer ${TOKEN}`, ...(lastId ? { 'last-event-id': lastId } : {}) } });
    if (res.status !== 200) {
      // The run's state query waits for a worker during the takeover; a timeout is asked again.
      await res.body?.cancel();
      await sleep(50);
      continue;
    }
    connections++;
    if (!ended) connectionsWhileRunning++;
    let left = 1 + Math.floor(Math.random() * 4);
    const messages = await readSse(res, (m) => !!m.event && (m.event === 'end' || --left === 0));
    for (const m of messages) {
      if (!m.event) continue;
      lastId = m.id;
      if (m.event === 'gap') pass.gaps++;
      const event = m.data as StreamEvent;
      const did = followText(calls, event);
      if (event.type === 'text') {
        callNumber = event.callNumber;
        if (did === 'append') pass.received += event.text;
      }
      if (did === 'restart' || did === 'resume') pass.joins.push(did);
      if (event.type === 'end') {
        pass.answer = event.state.answer;
        pass.shown = calls.get(callNumber);
        return pass;
      }
    }
  }
}

test('1,000 reconnects at random points across a kill -9 mid-stream: no character duplicated or lost', async () => {
  model.register('reconnect', () => ({ text: ANSWER, chunkSize: 4, chunkDelayMs: 10, continuable: true }));
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'agent-reconnect-'));
  const ledger = path.join(mkdtempSync(path.join(os.tmpdir(), 'agent-reconnect-ledger-')), 'tool-ledger.sqlite');
  const t0 = Date.now();
  const first = startWorkerProcess(workspace, ledger);

  const started = await fetch(`${baseUrl}/v1/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Count for me' }),
  });
  expect(started.status).toBe(201);
  const id = ((await started.json()) as { workflowId: string }).workflowId;

  const passes: Pass[] = [];
  const reader = async () => {
    while (connections < RECONNECTS) passes.push(await readPass(id));
  };
  const readers = Array.from({ length: READERS }, reader);

  // kill -9 once a third of the answer is in the channel; the second worker hands the call back and retries it.
  const streamed = async () => (await channel.read(id, START, 1_000)).entries.filter((e) => e.event.type === 'text').length;
  await waitFor(async () => ((await streamed()) >= 200 ? true : undefined), 60_000, 'a third of the answer streamed').catch(async (err: unknown) => {
    throw new Error(`${String(err)} (${await streamed()} text events)\n--- worker output ---\n${output.join('').slice(-4_000)}`);
  });
  const tKill = Date.now() - t0;
  const cKill = connections;
  first.kill('SIGKILL');
  await waitFor(() => (first.signalCode === 'SIGKILL' ? true : undefined), 5_000, 'the worker to die');
  startWorkerProcess(workspace, ledger);

  // Bounded below the test's own timeout, so that a run that does not end says where it stood and what the workers said.
  // The deadline's timer is cleared once the race is settled, so that it does not outlive the test.
  const deadline = new AbortController();
  const result = await Promise.race([
    env.client.workflow.getHandle(id).result(),
    delay(RESULT_WAIT_MS, undefined, { signal: deadline.signal }).then(() => {
      throw new Error(`the run did not end ${RESULT_WAIT_MS} ms after the kill (${connections} connections)`);
    }),
  ])
    .catch(async (err: unknown) => {
      throw new Error(`${String(err)} (killed at ${tKill} ms; ${await streamed()} text events in the channel)\n--- worker output ---\n${output.join('').slice(-4_000)}`);
    })
    .finally(() => deadline.abort());
  ended = true;
  const tEnd = Date.now() - t0;
  await Promise.all(readers);

  expect(result).toMatchObject({ status: 'COMPLETED', answer: ANSWER });
  expect(connections).toBeGreaterThanOrEqual(RECONNECTS);
  expect(passes.length).toBeGreaterThanOrEqual(READERS);
  for (const pass of passes) {
    // 0 duplicated and 0 lost characters: what arrived, taken together, is the answer once.
    expect(pass.received).toBe(ANSWER);
    expect(pass.answer).toBe(ANSWER);
    expect(pass.gaps).toBe(0);
    expect(pass.joins).toEqual(['resume']);
    expect(pass.shown).toMatchObject({ text: ANSWER, hole: false });
  }
  // The retry asked the provider to continue the streamed text, which it did not send again.
  const requests = model.requests('reconnect');
  expect(requests).toHaveLength(2);
  const [part, prompt] = requests[1].body.messages.slice(-2);
  expect(prompt).toEqual({ role: 'user', content: CONTINUE_PROMPT });
  expect(part.role).toBe('assistant');
  expect(ANSWER.startsWith(part.content)).toBe(true);
  expect(part.content.length).toBeGreaterThan(0);

  console.log(`kill -9 at ${tKill} ms (${cKill} connections), retry's request at ${requests[1].receivedAt - t0} ms, end at ${tEnd} ms: ${connections} connections, ${connectionsWhileRunning} while the run streamed, ${passes.length} passes`);
}, RESULT_WAIT_MS + 120_000);
