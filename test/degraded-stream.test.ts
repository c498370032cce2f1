/**
 * Issue 49's degraded case: the gateway on its own port (GATEWAY_PORT=18088, its own token). The gateway process
 * (`npm run gateway`) announces itself, and the production worker (`createAgentWorker`) left at its defaults finds it
 * and streams live. A gateway it cannot find (embedded in another process, or on another host) leaves it publishing to
 * 127.0.0.1:8080 where nothing listens; then a worker with AGENT_STREAM_URL=off. Watchers still get the whole text, marked degraded, with
 * the channel's id format; the run's state says `degraded`; the worker warns, naming what to set; the gateway's health
 * names it. A worker whose gateway answers but refuses its token does not start. Latency: bench/live-latency.ts.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../src/client';
import { createDataConverter } from '../src/codec';
import { codecSettings, gatewaySettings, streamSettings } from '../src/config';
import { buildGateway } from '../src/gateway';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { MemoryHub } from '../src/stream';
import { findGateway } from '../src/stream/discovery';
import { createAgentWorker } from '../src/worker';
import { defaultWorkerIdentity } from '../src/worker/worker';
import { readSse, type SseMessage } from './support/sse';
import { testServerAddress } from './support/temporal';

const TOKEN = `degraded-${randomUUID()}`;
const auth = { authorization: `Bearer ${TOKEN}` };
const TEXT = 'the degraded road still carries every word of this answer to its watchers';
/** The channel's id format, which the polling stream speaks too. */
const STREAM_ID = /^\d+-\d+_\d+\.\d+\.\d+\.\d+$/;

/** What the worker logs (the runtime's logger, which its stream warnings go to). */
const logged: Array<{ level: LogLevel; message: string }> = [];
const logger = {
  log: (level: LogLevel, message: string) => void logged.push({ level, message }),
  trace: () => undefined,
  debug: () => undefined,
  info: (message: string, _meta?: LogMetadata) => void logged.push({ level: 'INFO', message }),
  warn: (message: string, _meta?: LogMetadata) => void logged.push({ level: 'WARN', message }),
  error: (message: string, _meta?: LogMetadata) => void logged.push({ level: 'ERROR', message }),
};

let dir: string;
let model: ScriptedModel;
let app: FastifyInstance;
let baseUrl: string;
let agents: AgentClient;
const taskQueue = `degraded-${randomUUID()}`;

/** The worker's settings with nothing about the stream: AGENT_STREAM_URL, GATEWAY_PORT and the tokens unset. */
const workerEnv = (): NodeJS.ProcessEnv => ({
  TEMPORAL_ADDRESS: testServerAddress(),
  TEMPORAL_TASK_QUEUE: taskQueue,
  LLM_BASE_URL: model.url,
  LLM_API_KEY: 'scripted',
  AGENT_WORKSPACE: dir,
  AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
  AGENT_BLOB_DIR: path.join(dir, 'blobs'),
  AGENT_RETENTION: 'off',
  // Where gateways announce themselves: this test's own, so that nobody else's is found.
  AGENT_RUNTIME_DIR: path.join(dir, 'gateways'),
});

/** Whether anything accepts a connection at `port` on 127.0.0.1. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(!!socket.end()));
    socket.once('error', () => resolve(false));
  });

beforeAll(async () => {
  try {
    Runtime.install({ logger });
  } catch {
    // installed by an earlier file of this process: its logger sees nothing of this one
  }
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-degraded-'));
  model = await startScriptedModel();
  // About 5 s of streaming: long enough to read the run's state meanwhile on a loaded machine.
  // A script answers as many calls as it has steps: one per run.
  for (const name of ['defaults', 'off', 'found']) model.register(name, [{ text: TEXT, chunkSize: 4, chunkDelayMs: 250 }]);
  const settings = gatewaySettings({ GATEWAY_PORT: '18088', GATEWAY_TOKEN: TOKEN });
  // The gateway reads the call's heartbeats with the workers' data converter (their claim check), as deployed.
  agents = await AgentClient.connect({ address: testServerAddress(), namespace: 'default', taskQueue }, { dataConverter: createDataConverter(codecSettings(workerEnv())) });
  app = buildGateway({ agents, token: settings.token, stream: new MemoryHub() });
  // Port 18088 as the issue ran it; another process holding it only moves the gateway (the worker never looks there).
  await app.listen({ port: settings.port, host: settings.host }).catch(() => app.listen({ port: 0, host: settings.host }));
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await app?.close();
  await agents?.close();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the script once through a worker of `env`, following it on the gateway's `/events` and reading its state meanwhile. */
async function runThrough(env: NodeJS.ProcessEnv, script: 'defaults' | 'off' | 'found', gateway = baseUrl) {
  const worker = await createAgentWorker({ env });
  const running = worker.run();
  try {
    const run = await agents.start({ prompt: 'talk', model: script });
    const res = await fetch(`${gateway}/v1/runs/${run.workflowId}/events`, { headers: auth });
    expect(res.status).toBe(200);
    let ended = false;
    const reading = readSse(res, (m) => m.event === 'end').then((ms) => ms.filter((m) => m.event)).finally(() => (ended = true));
    // While the model streams, the run's state says its text cannot be published.
    let degradedState: { degraded?: boolean; partialText: string } | undefined;
    let streaming: { degraded?: boolean; partialText: string } | undefined;
    while (!degradedState && !ended) {
      const view = (await (await fetch(`${gateway}/v1/runs/${run.workflowId}`, { headers: auth })).json()) as { state: string; degraded?: boolean; partialText: string };
      if (view.state === 'STREAMING') streaming = view;
      if (view.state === 'STREAMING' && view.degraded) degradedState = view;
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const messages: SseMessage[] = await reading;
    const health = (await (await fetch(`${gateway}/v1/health`, { headers: auth })).json()) as { status: string; silent: string[]; workers: Array<{ identity: string; publishing: boolean }> };
    return { messages, degradedState, streaming, health };
  } finally {
    worker.shutdown();
    await running;
  }
}

function expectDegradedStream(messages: SseMessage[]) {
  expect(messages.find((m) => m.event === 'stream')?.data).toMatchObject({ status: 'degraded' });
  expect(messages.filter((m) => m.event === 'text').map((m) => m.data.text).join('')).toBe(TEXT);
  expect(messages.map((m) => m.id).filter((id) => !STREAM_ID.test(id ?? ''))).toEqual([]);
  expect(messages.at(-1)?.event).toBe('end');
}

test('the gateway process on a port of its own (GATEWAY_PORT=0) and its own token: a worker at its defaults finds it and streams live, and its file goes with it', async () => {
  const env = { ...workerEnv(), GATEWAY_PORT: '0', GATEWAY_TOKEN: TOKEN };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/bin/gateway.ts'], { cwd: path.resolve(__dirname, '..'), env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const runs = { temporalAddress: testServerAddress(), namespace: 'default', taskQueue };
    let found: { url: string; token?: string } | undefined;
    for (const until = Date.now() + 60_000; !found && Date.now() < until && child.exitCode === null; ) {
      found = findGateway(runs, workerEnv());
      if (!found) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (!found) throw new Error(`the gateway announced nothing: ${stderr}`);
    expect(found.token).toBe(TOKEN);
    expect(found.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(found.url).not.toBe('http://127.0.0.1:8080');
    // Only its user may read the file: it holds the token.
    const files = readdirSync(path.join(dir, 'gateways'));
    expect(files).toHaveLength(1);
    expect(statSync(path.join(dir, 'gateways', files[0])).mode & 0o077).toBe(0);
    // Another task queue's worker does not take it.
    expect(findGateway({ ...runs, taskQueue: `${taskQueue}-other` }, workerEnv())).toBeUndefined();

    logged.length = 0;
    const { messages, degradedState, streaming, health } = await runThrough(workerEnv(), 'found', found.url);
    expect(messages.find((m) => m.event === 'stream')).toBeUndefined();
    expect(messages.filter((m) => m.event === 'text').map((m) => m.data.text).join('')).toBe(TEXT);
    expect(messages.at(-1)?.event).toBe('end');
    expect(degradedState).toBeUndefined();
    expect(streaming).toBeDefined();
    expect(logged.filter((l) => l.level === 'WARN' && l.message.includes('stream channel'))).toEqual([]);
    expect(health.workers.find((w) => w.identity === defaultWorkerIdentity())).toMatchObject({ publishing: true });
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  expect(readdirSync(path.join(dir, 'gateways'))).toEqual([]);
}, 180_000);

test('a worker at its defaults that finds no gateway (127.0.0.1:8080, where nothing listens): text arrives degraded, with the channel\'s ids; its state, its log and the gateway\'s health say so', async () => {
  expect(streamSettings(workerEnv())).toEqual({ gatewayUrl: 'http://127.0.0.1:8080', gatewayDefault: true });
  expect(await listening(8080)).toBe(false);
  logged.length = 0;
  const { messages, degradedState, health } = await runThrough(workerEnv(), 'defaults');
  expectDegradedStream(messages);
  expect(degradedState).toMatchObject({ degraded: true });
  // Loud: a warning (not an info line) that names the default it tried and what to set instead.
  const warning = logged.find((l) => l.level === 'WARN' && l.message.includes('stream channel'))?.message;
  expect(warning).toContain('http://127.0.0.1:8080');
  expect(warning).toMatch(/no gateway of this task queue announced itself.*npm run gateway.*AGENT_STREAM_URL.*AGENT_STREAM_TOKEN.*AGENT_STREAM_URL=off/);
  expect(health.status).toBe('degraded');
  expect(health.silent).toContain(defaultWorkerIdentity());
}, 180_000);

test('a worker with AGENT_STREAM_URL=off: the same degraded stream and state, and the health names it', async () => {
  const { messages, degradedState, health } = await runThrough({ ...workerEnv(), AGENT_STREAM_URL: 'off' }, 'off');
  expectDegradedStream(messages);
  expect(degradedState).toMatchObject({ degraded: true });
  expect(health.silent).toContain(defaultWorkerIdentity());
}, 180_000);

test('a worker that says hello is publishing, not silent', async () => {
  const identity = `hello-${randomUUID()}@elsewhere`;
  const hello = await fetch(`${baseUrl}/internal/v1/workers`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ identity, taskQueue }) });
  expect(hello.status).toBe(204);
  const health = (await (await fetch(`${baseUrl}/v1/health`, { headers: auth })).json()) as { channel: string; taskQueue: string; silent: string[]; workers: Array<{ identity: string; publishing: boolean; lastPolledAt: string | null }> };
  expect(health).toMatchObject({ channel: 'hub', taskQueue });
  expect(health.workers.find((w) => w.identity === identity)).toMatchObject({ publishing: true, lastPolledAt: null });
  expect(health.silent).not.toContain(identity);
});

test('a worker whose gateway refuses its token does not start, and says what to set', async () => {
  const env = { ...workerEnv(), AGENT_STREAM_URL: baseUrl, AGENT_STREAM_TOKEN: 'not-the-gateways' };
  await expect(createAgentWorker({ env })).rejects.toThrow(/refused the worker's token \(401\): set AGENT_STREAM_TOKEN .*AGENT_STREAM_URL=off/);
  // A URL that answers but is no gateway's hub: the same, naming AGENT_STREAM_URL.
  const elsewhere = await startScriptedModel();
  try {
    await expect(createAgentWorker({ env: { ...workerEnv(), AGENT_STREAM_URL: elsewhere.url.replace(/\/v1$/, '') } })).rejects.toThrow(/is not an agent gateway .*set AGENT_STREAM_URL/);
  } finally {
    await elsewhere.close();
  }
}, 60_000);
