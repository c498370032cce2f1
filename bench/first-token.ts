/**
 * Figure (g), time to the first token (issue 54): from a person's send to the first token at an SSE watcher, against
 * the same provider called directly with the `openai` client. Each start, in turn: the provider directly; the product
 * through the gateway (`POST /v1/runs`, then `GET /v1/runs/:id/events`); the product through `AgentClient.start` (then
 * the same watcher); LangGraph.js streaming the same provider behind its SSE fan-out (bench/peers/langgraph-stream.mjs).
 * The worker and the gateway are the product's own processes (src/bin), as in figure (e).
 *
 * Two providers: `stub` answers its first chunk `firstTokenMs` after the request, each chunk stamped with its send
 * time, so a product start splits into the way to the provider (start, workflow task, activity dispatch, request) and
 * the way back (channel, gateway, SSE); `real` is llama.cpp's server with SmolLM2-135M (scripts/lib/real-model.ts),
 * behind a recording proxy so that the direct call sends the very request the product's worker sent.
 *
 *   npx tsx bench/first-token.ts --starts 200 --provider stub,real
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import OpenAI from 'openai';
import { AgentClient } from '../src/client';
import { langgraphTarget, productTarget, provider as stubProvider, track, type Target } from './figure-e';
import { percentile } from './lib/stats';
import { startBenchServer, stopBenchStack, type BenchServer, type ServerKind } from './lib/temporal';
import { startRealModel } from '../scripts/lib/real-model';

export interface FigureGOptions {
  starts: number;
  /** The stub provider's delay from a request to its first chunk. */
  firstTokenMs: number;
  providers: Array<'stub' | 'real'>;
  server: ServerKind;
  /** Include LangGraph.js (needs bench/peers/node_modules). */
  langgraph: boolean;
  scratch: string;
  log: (msg: string) => void;
}

/** One path's times over all starts, in ms: to the first token, and (stub) its way to the provider and back. */
export interface FirstTokenPath {
  n: number;
  p50: number;
  p95: number;
  max: number;
  /** From the send to the provider's first chunk, less the provider's own delay (stub only). */
  toProvider?: { p50: number; p95: number };
  /** From the provider's first chunk to the watcher reading it (stub only). */
  toWatcher?: { p50: number; p95: number };
  /** The product's way to the provider by its history's times (stub only), p50 of each part. */
  phases?: Phases;
  errors: string[];
}

/**
 * Where a product start's way to the provider goes, from its history (the server's clock, the same machine's): the start
 * until the server records it, the first workflow task waiting for a worker, the worker running it, the model activity
 * waiting for a worker, and the activity until its request reaches the provider (less the stub's own delay: it holds
 * the stub's timer slack, a few ms, as the direct call's way to the provider does).
 */
export interface Phases {
  start: number;
  firstTaskQueued: number;
  firstTaskRun: number;
  activityQueued: number;
  request: number;
}

export interface FigureGProvider {
  /** Keyed `direct`, `gateway`, `client`, `langgraph`. */
  paths: Record<string, FirstTokenPath>;
  /** What the product adds over the direct call: p50 and p95 of each product path less the direct call's. */
  added: Record<string, { p50: number; p95: number }>;
  error?: string;
}

export type FigureG = { firstTokenMs: number; server: ServerKind; providers: Record<string, FigureGProvider> };

/** One start's times: the first token read at `read`, stamped by the stub provider with `sent` (NaN for the real one). */
interface Sample {
  total: number;
  sent: number;
  read: number;
  t0: number;
  phases?: Phases;
}

const msOf = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number => (t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : NaN);

/** A product start's phases, read from its history after the start was timed; `firstTokenMs`: the stub's own delay. */
async function phasesOf(server: BenchServer, workflowId: string, s: Sample, firstTokenMs: number): Promise<Phases> {
  const events = (await server.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const first = (has: (e: (typeof events)[number]) => unknown) => msOf(events.find((e) => has(e))?.eventTime);
  const started = first((e) => e.workflowExecutionStartedEventAttributes);
  const taskStarted = first((e) => e.workflowTaskStartedEventAttributes);
  const taskDone = first((e) => e.workflowTaskCompletedEventAttributes);
  const activityStarted = first((e) => e.activityTaskStartedEventAttributes);
  return { start: started - s.t0, firstTaskQueued: taskStarted - started, firstTaskRun: taskDone - taskStarted, activityQueued: activityStarted - taskDone, request: s.sent - firstTokenMs - activityStarted };
}

/** Forwards to `upstream`, keeping the last chat request's body: the direct call then sends exactly what the worker sent. */
function recordingProxy(upstream: string): Promise<Server & { lastBody?: string }> {
  const server: Server & { lastBody?: string } = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString();
      if (req.url?.endsWith('/chat/completions') && !body.includes('"bench-direct"')) server.lastBody = body;
      void fetch(`${upstream}${req.url!.replace(/^\/v1/, '')}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'GET' ? undefined : body }).then(
        async (up) => {
          res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
          res.socket?.setNoDelay(true);
          if (up.body) for await (const chunk of up.body) res.write(chunk);
          res.end();
        },
        (err: unknown) => res.writeHead(502).end(String(err)),
      );
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** The provider directly: the worker's last request when there is one (real), else a one-line prompt (stub). */
async function direct(openai: OpenAI, lastBody: string | undefined): Promise<Sample> {
  const body = lastBody ? (JSON.parse(lastBody) as OpenAI.ChatCompletionCreateParamsStreaming) : { model: 'bench', messages: [{ role: 'user' as const, content: 'go' }] };
  const t0 = Date.now();
  // `user` marks the call, so the proxy does not take it for the worker's.
  const stream = await openai.chat.completions.create({ ...body, stream: true, user: 'bench-direct' });
  let first: Sample | undefined;
  for await (const chunk of stream) {
    const text = chunk.choices[0]?.delta?.content;
    if (!text || first) continue;
    first = { t0, read: Date.now(), sent: Number(text.split(';')[0]), total: 0 };
  }
  if (!first) throw new Error('the provider sent no text');
  return { ...first, total: first.read - t0 };
}

/** A product or peer path: start a run, watch it, the first token's read time. */
async function viaTarget(target: Target, start: () => Promise<string>, history?: { server: BenchServer; firstTokenMs: number }): Promise<Sample> {
  const t0 = Date.now();
  const id = await start();
  const w = await target.watch(id, AbortSignal.timeout(60_000));
  if (!w.tokens.length) throw new Error(`run ${id}: no text${w.error ? ` (${w.error})` : ''}${w.degraded ? ` (degraded: ${w.degraded})` : ''}`);
  const [sent, read] = w.tokens[0];
  const s: Sample = { t0, sent, read, total: read - t0 };
  return history && Number.isFinite(sent) ? { ...s, phases: await phasesOf(history.server, id, s, history.firstTokenMs) } : s;
}

function summarize(samples: Sample[], errors: string[], firstTokenMs: number | undefined): FirstTokenPath {
  const totals = samples.map((s) => s.total);
  const out: FirstTokenPath = { n: samples.length, p50: percentile(totals, 50), p95: percentile(totals, 95), max: totals.length ? Math.max(...totals) : NaN, errors: errors.slice(0, 3) };
  if (firstTokenMs !== undefined && samples.every((s) => Number.isFinite(s.sent))) {
    const to = samples.map((s) => s.sent - s.t0 - firstTokenMs);
    const back = samples.map((s) => s.read - s.sent);
    out.toProvider = { p50: percentile(to, 50), p95: percentile(to, 95) };
    out.toWatcher = { p50: percentile(back, 50), p95: percentile(back, 95) };
  }
  const phases = samples.flatMap((s) => (s.phases ? [s.phases] : []));
  if (phases.length) out.phases = Object.fromEntries(Object.keys(phases[0]).map((k) => [k, percentile(phases.map((p) => p[k as keyof Phases]), 50)])) as unknown as Phases;
  return out;
}

async function measureProvider(kind: 'stub' | 'real', server: BenchServer, opts: FigureGOptions): Promise<FigureGProvider> {
  const dir = path.join(opts.scratch, `figure-g-${kind}`);
  mkdirSync(path.join(dir, 'workspace'), { recursive: true });
  const stub = kind === 'stub' ? await stubProvider({ chunks: 3, gapMs: 5, thinkMs: opts.firstTokenMs, idleMs: 0 }) : undefined;
  const real = kind === 'real' ? await startRealModel({ contextSize: 8192, maxTokens: 16, logFile: path.join(dir, 'llama.log') }) : undefined;
  if (real) track(real.pid);
  const proxy = real ? await recordingProxy(real.url) : undefined;
  const modelUrl = `http://127.0.0.1:${((stub ?? proxy)!.address() as AddressInfo).port}/v1`;
  const openai = new OpenAI({ baseURL: modelUrl, apiKey: 'bench', maxRetries: 0 });
  const targets: Array<Target & { stop(): Promise<void> }> = [];
  try {
    const product = await productTarget(server, modelUrl, dir);
    targets.push(product);
    const agents = new AgentClient(server.client, product.taskQueue);
    const peer = opts.langgraph ? await langgraphTarget(modelUrl, dir) : undefined;
    if (peer) targets.push(peer);
    const history = kind === 'stub' ? { server, firstTokenMs: opts.firstTokenMs } : undefined;
    const paths: Record<string, () => Promise<Sample>> = {
      direct: () => direct(openai, proxy?.lastBody),
      gateway: () => viaTarget(product, () => product.start('first token'), history),
      client: () => viaTarget(product, async () => (await agents.start({ prompt: 'first token' })).workflowId, history),
      ...(peer ? { langgraph: () => viaTarget(peer, () => peer.start('first token')) } : {}),
    };
    const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
    const errors: Record<string, string[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
    const names = Object.keys(paths);
    for (let i = 0; i < opts.starts; i++) {
      // Each start tries every path, in an order that turns, so that none always goes first after a quiet moment.
      for (let j = 0; j < names.length; j++) {
        const name = names[(i + j) % names.length];
        try {
          samples[name].push(await paths[name]());
        } catch (err) {
          errors[name].push(err instanceof Error ? err.message : String(err));
        }
      }
      if ((i + 1) % 50 === 0) opts.log(`g: ${kind} ${i + 1}/${opts.starts} starts`);
    }
    const delay = kind === 'stub' ? opts.firstTokenMs : undefined;
    const summary = Object.fromEntries(names.map((k) => [k, summarize(samples[k], errors[k], delay)]));
    const added = Object.fromEntries(
      names.filter((k) => k !== 'direct').map((k) => [k, { p50: summary[k].p50 - summary.direct.p50, p95: summary[k].p95 - summary.direct.p95 }]),
    );
    return { paths: summary, added };
  } finally {
    for (const t of targets) await t.stop().catch(() => undefined);
    proxy?.close();
    await real?.stop();
    stub?.close();
    stub?.closeAllConnections();
  }
}

export async function figureG(opts: FigureGOptions): Promise<FigureG> {
  const out: FigureG = { firstTokenMs: opts.firstTokenMs, server: opts.server, providers: {} };
  const server = await startBenchServer({}, undefined, opts.server);
  if (opts.server === 'dev') track(server.pids.server);
  try {
    for (const kind of opts.providers) {
      try {
        const r = await measureProvider(kind, server, opts);
        out.providers[kind] = r;
        for (const [name, p] of Object.entries(r.paths)) {
          const split = p.toProvider ? `, to the provider p50 ${p.toProvider.p50} / p95 ${p.toProvider.p95}, back p50 ${p.toWatcher!.p50} / p95 ${p.toWatcher!.p95}` : '';
          const adds = r.added[name] ? `, adds p50 ${r.added[name].p50} / p95 ${r.added[name].p95}` : '';
          const phases = p.phases ? `; phases p50 ${JSON.stringify(Object.fromEntries(Object.entries(p.phases).map(([k, v]) => [k, Math.round(v)])))}` : '';
          opts.log(`g: ${kind} ${name}: p50 ${p.p50} ms, p95 ${p.p95} ms, max ${p.max} ms (${p.n} starts${p.errors.length ? `, errors: ${p.errors[0]}` : ''})${adds}${split}${phases}`);
        }
      } catch (err) {
        out.providers[kind] = { paths: {}, added: {}, error: err instanceof Error ? err.message : String(err) };
        opts.log(`g: ${kind} failed: ${out.providers[kind].error}`);
      }
    }
  } finally {
    await server.stop();
  }
  return out;
}

if (require.main === module) {
  const o = new Command('first-token')
    .option('--starts <n>', 'starts a path', '200')
    .option('--first-token-ms <ms>', 'the stub provider\'s delay to its first chunk', '100')
    .option('--provider <list>', 'stub, real or both', 'stub,real')
    .option('--server <kind>', 'dev or stack', 'dev')
    .option('--no-langgraph', 'leave LangGraph.js out')
    .parse(process.argv)
    .opts();
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-g-'));
  figureG({
    starts: Number(o.starts),
    firstTokenMs: Number(o.firstTokenMs),
    providers: String(o.provider).split(',') as FigureGOptions['providers'],
    server: o.server as ServerKind,
    langgraph: Boolean(o.langgraph),
    scratch,
    log: (m) => console.log(m),
  })
    .finally(() => stopBenchStack())
    .then(
      (r) => {
        console.log(JSON.stringify(r));
        rmSync(scratch, { recursive: true, force: true });
        process.exit(0);
      },
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
}
