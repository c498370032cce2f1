/**
 * Interrupt latency and its heartbeat cost (issue 27), by hand: `tsx bench/interrupt-latency.ts [heartbeatMs] [streams] [interrupts] [split] [hub|hub-no-relay]`.
 * Starts its own dev server (with a metrics port) and a worker whose model calls heartbeat every `heartbeatMs`.
 * Cost: `streams` runs stream at once for 10 s; the frontend's count of RecordActivityTaskHeartbeat requests over that
 * window, per second (the history service counts each again). Figures: docs/steering.md. Latency: `interrupts` runs, each interrupted at a random moment of its stream; the time from
 * sending `sendMessage(..., { interrupt: true })` to the scripted model seeing the client close the connection.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { AgentClient, type AgentRunHandle } from '../src/client';
import { startScriptedModel } from '../src/scripted-model';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { bundleAgentWorkflows } from '../src/worker/workflow-bundle';
import { streamSinks } from '../src/stream/sinks';
import { startDevServer } from '../scripts/lib/dev-server';
import { freePort } from '../scripts/lib/free-port';
import { closeSafeConnectionPlugin } from '../src/config/connection';
import { ModelCallsInFlight } from '../src/activities';
import { buildGateway } from '../src/gateway';
import { httpStopRelay, httpTarget, liveStream, MemoryHub } from '../src/stream';

const TOKEN = 'bench-interrupt';

const LONG = 'A long answer goes on. '.repeat(2_000);
const summary = (xs: number[]) => ({ min: Math.min(...xs), p50: pct(xs, 50), p90: pct(xs, 90), max: Math.max(...xs) });
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function heartbeatRequests(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('service_requests{') && line.includes('operation="RecordActivityTaskHeartbeat"') && line.includes('service_name="frontend"')) total += Number(line.split(' ').at(-1));
  }
  return total;
}

async function main(): Promise<void> {
  const [heartbeatMs = 800, streams = 10, interrupts = 30] = process.argv.slice(2, 5).map(Number);
  // `split`: the workflows on one worker, the activities on another, so that no run's workflow task finds its model
  // call on its own worker and every interrupt reaches the call at its next heartbeat (the bound for several workers).
  const split = process.argv[5] === 'split';
  // `hub`: the workers publish to a gateway's hub and relay stops through it (stream/stops.ts), as a fleet with the
  // embedded channel does; without it, no channel (the call heartbeats at the degraded pace).
  const hubbed = process.argv[6] === 'hub' || process.argv[6] === 'hub-no-relay';
  // `hub-no-relay`: the hub without the stop relay (a call on another worker hears of its stop at its next heartbeat).
  const relayed = process.argv[6] === 'hub';
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-interrupt-'));
  const metricsPort = await freePort();
  const server = await startDevServer({ port: await freePort(), headless: true, dbFile: path.join(dir, 'dev.sqlite'), logFile: path.join(dir, 'server.log'), extraArgs: ['--metrics-port', String(metricsPort)] });
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const model = await startScriptedModel();
  // Each run's first call streams for minutes; the call after the interrupt (its last message is the user's) answers.
  model.register('slow', ({ request }) => (request.messages.at(-1)?.content === 'stop' ? { text: 'short' } : { text: LONG, chunkSize: 5, chunkDelayMs: 50 }));
  const taskQueue = 'bench-interrupt';
  const connection = await NativeConnection.connect({ address: server.address, plugins: [closeSafeConnectionPlugin] });
  const activityDeps = {
    openai: openAIClient({ baseURL: model.url, apiKey: 'scripted' }),
    defaultModel: 'slow',
    workspace: mkdtempSync(path.join(dir, 'ws-')),
    modelHeartbeatMs: heartbeatMs,
  };
  const workflowBundle = await bundleAgentWorkflows();
  const temporal = new Client({ connection: await Connection.connect({ address: server.address, plugins: [closeSafeConnectionPlugin] }) });
  const client = new AgentClient(temporal, taskQueue);
  const gateway = hubbed ? buildGateway({ agents: client, token: TOKEN, stream: new MemoryHub() }) : undefined;
  const gatewayUrl = gateway ? await gateway.listen({ port: 0, host: '127.0.0.1' }) : undefined;
  const quiet = { warn: () => undefined, info: () => undefined };
  const stream = gatewayUrl ? liveStream(httpTarget(gatewayUrl, TOKEN), quiet) : undefined;
  const relays = gatewayUrl && relayed ? [httpStopRelay(gatewayUrl, TOKEN), httpStopRelay(gatewayUrl, TOKEN)] : [];
  const options = agentWorkerOptions({ ...activityDeps, ...(stream ? { stream, callsInFlight: new ModelCallsInFlight(undefined, relays[1]) } : {}) });
  const workers = split
    ? [
        await Worker.create({ connection, taskQueue, workflowBundle, sinks: streamSinks(stream, new ModelCallsInFlight(undefined, relays[0])) }),
        await Worker.create({ connection, taskQueue, ...options }),
      ]
    : [await Worker.create({ connection, taskQueue, workflowBundle, ...options })];
  const running = Promise.all(workers.map((w) => w.run()));
  const streaming = async (handle: AgentRunHandle) => {
    for (;;) {
      const s = await handle.state();
      if (s.state === 'STREAMING' && s.partialText.length > 0) return;
      await sleep(50);
    }
  };
  try {
    // Cost: `streams` calls streaming at once for 10 s.
    const runs = await Promise.all(Array.from({ length: streams }, () => client.start({ prompt: 'Write', model: 'slow', limits: { timeoutMs: 600_000 } })));
    await Promise.all(runs.map(streaming));
    const before = await heartbeatRequests(metricsUrl);
    await sleep(10_000);
    const perSecond = ((await heartbeatRequests(metricsUrl)) - before) / 10;
    // Terminated, not aborted: ten streams keep this 2-core machine busy enough that an abort can miss its deadline.
    await Promise.all(runs.map((r) => temporal.workflow.getHandle(r.workflowId).terminate('bench done')));

    // Latency: one interrupted run at a time, each at a random moment of the heartbeat cycle.
    const latencies: number[] = [];
    /** From the update's answer (the run applied it) to the close: without the update's own round trip and workflow task. */
    const afterApplied: number[] = [];
    for (let i = 0; i < interrupts; i++) {
      const handle = await client.start({ prompt: 'Write', model: 'slow' });
      await streaming(handle);
      await sleep(Math.random() * 1_000);
      const requests = model.requests('slow').length;
      const sent = Date.now();
      await handle.sendMessage('stop', { interrupt: true });
      const applied = Date.now();
      for (;;) {
        const closedAt = model.requests('slow')[requests - 1]?.closedAt;
        if (closedAt) {
          latencies.push(closedAt - sent);
          afterApplied.push(closedAt - applied);
          break;
        }
        await sleep(5);
      }
      await handle.result();
    }
    console.log(
      JSON.stringify({
        heartbeatMs,
        split,
        channel: hubbed ? 'hub' : 'none',
        relay: relayed,
        streams,
        heartbeatRpcsPerSecond: perSecond,
        perStream: perSecond / streams,
        interrupts,
        latencyMs: summary(latencies),
        afterAppliedMs: summary(afterApplied),
        all: latencies,
      }),
    );
  } finally {
    for (const w of workers) w.shutdown();
    await running;
    for (const relay of relays) await relay.close();
    await gateway?.close();
    await connection.close();
    await model.close();
    await server.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
