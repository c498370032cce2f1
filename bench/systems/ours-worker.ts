/**
 * Child process: this product's agent worker, built as `createAgentWorker` builds it (the production activities from
 * `agentWorkerOptions`, the claim-check data converter) plus the tuning the bench passes in BENCH_WORKER (JSON).
 * It starts polling at boot, so the driver can time a restart from the moment it spawns the process.
 */
import path from 'node:path';
// Types only at the top: the SDK loads in main(), after the workflow thread has started (as the image's entry does).
import type { WorkerOptions } from '@temporalio/worker';
import type * as SdkModule from '@temporalio/worker';
import type * as ServeModule from '../lib/serve';

import type * as CodecModule from '../../src/codec';
import type * as WorkerModule from '../../src/worker';
import type * as InflightModule from '../../src/activities/inflight';
import type * as HeapModule from '../../src/worker/heap';
import type * as FsModule from 'node:fs';
import type * as InspectorModule from 'node:inspector';
import type * as V8Module from 'node:v8';

/** What the driver passes; everything under `tuning` is a plain worker option or a harness-only switch. */
export interface OursWorkerConfig {
  address: string;
  taskQueue: string;
  modelUrl: string;
  workspace: string;
  blobDir: string;
  /** FsBlobStore's `fsync`; absent, its default (true). */
  blobFsync?: boolean;
  /** FsBlobStore's `packs`; absent, its default (true). */
  blobPacks?: boolean;
  /** The tool ledger's SQLite file, where the worker writes down its activities in flight (as createAgentWorker does); absent, it does not. */
  ledgerFile?: string;
  /** An earlier commit's src/ (profile `srcRef`) whose activities and codec to load instead of today's. */
  srcDir?: string;
  /** A workflow bundle built ahead of time (`bundleWorkflowCode`); absent, the worker bundles at boot as production does. */
  bundlePath?: string;
  /** Payloads above this many bytes go to the blob store. @default the codec's 32 KiB */
  claimCheckThresholdBytes?: number;
  /** Turn the product's own source maps on as the image's entry does (src/bin/source-maps); the driver says whether that code has it. */
  sourceMaps?: boolean;
  /** How often a model call heartbeats (the activity deps' `modelHeartbeatMs`); absent, the product's default. */
  modelHeartbeatMs?: number;
  /** Start the SDK's workflow thread before the modules load and have the worker adopt it, as the image's entry does (src/worker/early-thread); absent or false, the SDK starts it in `Worker.create`. */
  earlyThread?: boolean;
  /** Set V8's old-generation growth as the image's entry does (src/worker/heap); absent or false, V8's own. */
  heapTuning?: boolean;
  /** Runtime log level; production's default is INFO, which logs every transition. */
  logLevel?: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  workerOptions?: Partial<
    Pick<
      WorkerOptions,
      | 'maxConcurrentActivityTaskExecutions'
      | 'maxConcurrentLocalActivityExecutions'
      | 'maxConcurrentWorkflowTaskExecutions'
      | 'maxConcurrentWorkflowTaskPolls'
      | 'maxConcurrentActivityTaskPolls'
      | 'maxCachedWorkflows'
      | 'nonStickyToStickyPollRatio'
      | 'maxEagerActivityReservationsPerWorkflowTask'
      | 'workflowTaskPollerBehavior'
      | 'activityTaskPollerBehavior'
      | 'reuseV8Context'
      | 'workflowThreadPoolSize'
      | 'shutdownGraceTime'
      | 'debugMode'
    >
  >;
}

/**
 * BENCH_MEMLOG=<dir>: the worker appends its memory to <dir>/memory-<pid>.jsonl every 5 s (process.memoryUsage, and
 * each worker thread's heap, the SDK's workflow thread among them, read through the inspector) and writes heap
 * snapshots of its main thread and of its worker threads to <dir> when a file named `snapshot` appears there (which it
 * removes; SIGUSR2 would stop the SDK's worker), for finding what a long run keeps.
 */
function logMemory(dir: string): void {
  const { appendFileSync, existsSync, mkdirSync, rmSync, writeFileSync } = require('node:fs') as typeof FsModule;
  const v8 = require('node:v8') as typeof V8Module;
  const inspector = require('node:inspector') as typeof InspectorModule;
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `memory-${process.pid}.jsonl`);
  const session = new inspector.Session();
  session.connect();
  const threads: string[] = [];
  let nextId = 1;
  const waiting = new Map<number, (result: any) => void>();
  const chunks = new Map<string, string[]>();
  session.on('NodeWorker.attachedToWorker', (m: any) => threads.push(m.params.sessionId));
  session.on('NodeWorker.receivedMessageFromWorker', (m: any) => {
    const msg = JSON.parse(m.params.message);
    if (msg.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.get(m.params.sessionId)?.push(msg.params.chunk);
    else if (waiting.has(msg.id)) {
      waiting.get(msg.id)!(msg.result);
      waiting.delete(msg.id);
    }
  });
  session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  const ask = (sessionId: string, method: string, params: object = {}) =>
    new Promise<any>((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method, params }) });
    });
  const write = async () => {
    const heaps = await Promise.all(threads.map((t) => ask(t, 'Runtime.getHeapUsage')));
    const line = { atMs: Date.now(), ...process.memoryUsage(), malloced: v8.getHeapStatistics().malloced_memory, threads: heaps.map((h) => ({ used: h?.usedSize, total: h?.totalSize })) };
    appendFileSync(file, JSON.stringify(line) + '\n');
  };
  const snapshot = () => {
    v8.writeHeapSnapshot(path.join(dir, `heap-${process.pid}-${Date.now()}-main.heapsnapshot`));
    for (const [i, t] of threads.entries()) {
      chunks.set(t, []);
      void ask(t, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false }).then(() => {
        writeFileSync(path.join(dir, `heap-${process.pid}-${Date.now()}-thread${i}.heapsnapshot`), chunks.get(t)!.join(''));
        chunks.delete(t);
      });
    }
  };
  const trigger = path.join(dir, 'snapshot');
  setInterval(() => {
    void write();
    if (existsSync(trigger)) {
      rmSync(trigger);
      snapshot();
    }
  }, 5_000).unref();
}

async function main(): Promise<void> {
  if (process.env.BENCH_MEMLOG) logMemory(process.env.BENCH_MEMLOG);
  const config = JSON.parse(process.env.BENCH_WORKER ?? '{}') as OursWorkerConfig;
  const src = config.srcDir ?? path.resolve(__dirname, '../../src');
  // As the image's entry (src/bin/worker.ts) does first: the workflow thread starts, then the SDK loads and the
  // product's own source maps go on.
  // Builds of src/ from before issue 49 (bench profiles of earlier commits) started their own workflow thread first.
  if (config.earlyThread) (require(path.join(src, 'worker/early-thread')) as { startWorkflowThreadEarly(): unknown }).startWorkflowThreadEarly();
  if (config.sourceMaps) require(path.join(src, 'bin/source-maps'));
  if (config.heapTuning) (require(path.join(src, 'worker/heap')) as typeof HeapModule).tuneWorkerHeap();
  const { NativeConnection, Runtime, DefaultLogger, Worker } = require('@temporalio/worker') as typeof SdkModule;
  const { serveWorker } = require('../lib/serve') as typeof ServeModule;
  // The product's Worker, which adopts that thread (it came with it); without one, it is the SDK's Worker anyway.
  const WorkerClass = config.earlyThread ? (require(path.join(src, 'worker/sdk-worker')) as { AgentSdkWorker: typeof Worker }).AgentSdkWorker : Worker;
  const { claimCheckDataConverter, FsBlobStore, ConversationStore } = require(path.join(src, 'codec')) as Partial<typeof CodecModule> &
    Pick<typeof CodecModule, 'claimCheckDataConverter' | 'FsBlobStore'>;
  const { agentWorkerOptions, openAIClient, SHUTDOWN_GRACE_TIME } = require(path.join(src, 'worker')) as Partial<typeof WorkerModule> & Pick<typeof WorkerModule, 'agentWorkerOptions' | 'openAIClient'>;
  if (config.logLevel) Runtime.install({ logger: new DefaultLogger(config.logLevel) });
  const connection = await NativeConnection.connect({ address: config.address });
  // As createAgentWorker does: hand back what a crashed worker left in flight, and write down this one's (absent before).
  const inflight = config.ledgerFile ? loadInflight(src, config.ledgerFile) : undefined;
  await inflight?.recover(connection, 'default');
  const store = new FsBlobStore(config.blobDir, {
    ...(config.blobFsync === false ? { fsync: false } : {}),
    ...(config.blobPacks === false ? { packs: false } : {}),
  });
  const dataConverter = claimCheckDataConverter({ store, thresholdBytes: config.claimCheckThresholdBytes });
  const worker = await WorkerClass.create({
    connection,
    taskQueue: config.taskQueue,
    ...(config.bundlePath ? { workflowBundle: { codePath: config.bundlePath } } : { workflowsPath: require.resolve('../../src/workflows') }),
    dataConverter,
    ...agentWorkerOptions({
      openai: openAIClient({ baseURL: config.modelUrl, apiKey: 'bench' }),
      defaultModel: 'bench',
      workspace: config.workspace,
      // As createAgentWorker wires it (absent before the tuning).
      ...(ConversationStore ? { conversations: new ConversationStore(store, { dataConverter }) } : {}),
      ...(config.modelHeartbeatMs ? { modelHeartbeatMs: config.modelHeartbeatMs } : {}),
    }),
    // As createAgentWorker sets it (absent before the tuning: the SDK's 0).
    ...(SHUTDOWN_GRACE_TIME ? { shutdownGraceTime: SHUTDOWN_GRACE_TIME } : {}),
    ...(inflight ? { interceptors: inflight.addTo() } : {}),
    ...config.workerOptions,
  });
  await serveWorker(worker, connection);
}

function loadInflight(src: string, file: string): InstanceType<typeof InflightModule.InflightActivities> | undefined {
  let module: typeof InflightModule;
  try {
    module = require(path.join(src, 'activities/inflight')) as typeof InflightModule;
  } catch {
    return undefined; // code from before the journal
  }
  return new module.InflightActivities(file);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
