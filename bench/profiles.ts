/**
 * Profiles of this product for the bench. Each is the product's own src/ (today's, or an earlier commit's) plus what
 * a deployment chooses: a prebuilt workflow bundle, dev server settings. `TUNED` is what the bench reports as the
 * product; `before` keeps the figures of the code before the tuning in BENCHMARKS.md measurable in the same run.
 */
import { LOCAL_QUEUE_POLL_RATES, LOCAL_TIMER_SHIFT } from '../scripts/lib/dev-server';
import type { OursProfile } from './systems';

/** The product before the tuning (commit 03fc755): SDK default worker options, an upsert on every transition, every tool a task-queue activity, a 15 s model heartbeat timeout, bundling at boot. */
const before: OursProfile = { name: 'before', srcRef: '03fc755' };

/** Exactly what `npm run worker` does today: the product's worker options, INFO logs, bundling at boot. */
const baseline: OursProfile = { name: 'baseline' };

/**
 * As the Docker image runs it: the workflow bundle built once ahead of time (AGENT_WORKFLOW_BUNDLE_DIR), and the
 * worker process running JavaScript (`node dist/bin/worker.js`), not TypeScript through tsx.
 */
const prebundled: OursProfile = { ...baseline, name: 'prebundled', prebundle: true, compiled: true };

/** `prebundled` with its worker process running TypeScript through tsx, as the bench ran every profile until 2026-11-25. */
const prebundledTsx: OursProfile = { ...prebundled, name: 'prebundled-tsx', compiled: false };

/** The dev server's SQLite with a larger page cache and memory-mapped I/O, and eager activity dispatch on. */
const server: OursProfile = {
  ...prebundled,
  name: 'server',
  server: {
    pragmas: ['cache_size=-65536', 'mmap_size=268435456', 'temp_store=memory'],
    dynamicConfig: ['system.enableActivityEagerExecution=true'],
  },
};

/** `prebundled` with eager activity dispatch on the dev server: a workflow task's completion carries the activity task back. */
const eager: OursProfile = {
  ...prebundled,
  name: 'eager',
  server: { dynamicConfig: ['system.enableActivityEagerExecution=true'] },
};

/** `prebundled` with one partition per task queue on the dev server (Temporal's default is 4 read and 4 write partitions). */
const ONE_PARTITION = ['matching.numTaskqueueReadPartitions=1', 'matching.numTaskqueueWritePartitions=1'];
const onePartition: OursProfile = { ...prebundled, name: 'one-partition', server: { dynamicConfig: ONE_PARTITION } };

/** Both: eager activity dispatch and one partition per task queue. */
const eagerOnePartition: OursProfile = {
  ...prebundled,
  name: 'eager-one-partition',
  server: { dynamicConfig: ['system.enableActivityEagerExecution=true', ...ONE_PARTITION] },
};

/** `prebundled` with a larger young generation for V8 (semi-spaces of 64 MB, Node 20's default is 16): fewer scavenges. */
const semiSpace64: OursProfile = { ...prebundled, name: 'semi-space-64', nodeArgs: ['--max-semi-space-size=64'] };

/** `prebundled` with V8's own old-generation growth, not the worker entry's (src/worker/heap.ts): what that tuning buys. */
const noHeapTuning: OursProfile = { ...prebundled, name: 'no-heap-tuning', heapTuning: false };

/**
 * An experiment, not a mode of the product: `prebundled` with every model call run as a local activity
 * (bench/lib/local-model-calls.ts), to measure what a step costs when the model's answer needs no activity on the server.
 */
const localModel: OursProfile = {
  ...prebundled,
  name: 'local-model',
  workflowInterceptorModules: [require.resolve('./lib/local-model-calls')],
};

/** `local-model` with a workflow task slot for each of (c)'s 1,000 runs: a local activity holds its run's slot until it ends. */
const localModelSlots: OursProfile = { ...localModel, name: 'local-model-slots', workerOptions: { maxConcurrentWorkflowTaskExecutions: 1_000 } };

/** `before` with the same deployment choices as `server`: what the src changes alone bought. */
const beforeServer: OursProfile = { ...server, name: 'before-server', srcRef: before.srcRef };

/** `prebundled` on the code before the model call ran local tools itself (issue 14's first cut, commit a8979f1). */
const beforeInline: OursProfile = { ...prebundled, name: 'before-inline', srcRef: 'a8979f1' };

/** `prebundled` on the code before zod and the input schemas were preloaded once per worker (commit c68b603). */
const beforePreload: OursProfile = { ...prebundled, name: 'before-preload', srcRef: 'c68b603' };

/** `prebundled` with no source maps at all (neither the entry's nor `--enable-source-maps`): what mapping stack traces back to the sources costs. */
const noSourceMaps: OursProfile = { ...prebundled, name: 'no-source-maps', sourceMaps: false };

/** `prebundled` without the journal of activities in flight (crash recovery): what writing it down costs a step. */
const noJournal: OursProfile = { ...prebundled, name: 'no-journal', journal: false };

/** `prebundled` on the code before issue 26's cuts to a step's CPU (commit 76b609c). */
const beforeIssue26: OursProfile = { ...prebundled, name: 'before-26', srcRef: '76b609c' };

/** Issue 26's cuts one at a time: the bundle compiled for ES2022 (dee9934), then the tool schemas cached (dd07987). */
const cut26Native: OursProfile = { ...prebundled, name: 'cut-26-native', srcRef: 'dee9934' };
const cut26Schemas: OursProfile = { ...prebundled, name: 'cut-26-schemas', srcRef: 'dd07987' };

/** `prebundled` on the code before issue 26's second round of cuts (commit 0d43e67), compiled as `prebundled` is. */
const before26b: OursProfile = { ...prebundled, name: 'before-26b', srcRef: '0d43e67' };

/** `prebundled` on the code before the third round of issue 26 (7ba907a): the machine's table worked out for every run. */
const before26c: OursProfile = { ...prebundled, name: 'before-26c', srcRef: '7ba907a' };

/** `prebundled` on the code before the fourth round of issue 26 (e10ced1): the workflow bundle's source map with the sources' text. */
const before26d: OursProfile = { ...prebundled, name: 'before-26d', srcRef: 'e10ced1' };

/** `prebundled` on the code before the blob store's one-level layout (aeff481): shard folders `ab/cd/`, 65,536 of them. */
const before26e: OursProfile = { ...prebundled, name: 'before-26e', srcRef: 'aeff481' };

/** `prebundled` on the code before the fifth round of issue 26 (5567d38): the workflow thread started by `Worker.create`, after every module. */
const before26f: OursProfile = { ...prebundled, name: 'before-26f', srcRef: '5567d38' };

/** `prebundled` on the code before the sixth round of issue 26 (3b55554): a model call's unsent text tail signalled to the run before the call returns. */
const before26g: OursProfile = { ...prebundled, name: 'before-26g', srcRef: '3b55554' };

/** `prebundled` on the code before the seventh round of issue 26 (9559ce4): every conversation node flushed to disk, file and folder. */
const before26h: OursProfile = { ...prebundled, name: 'before-26h', srcRef: '9559ce4' };

/** `prebundled` on the code before scope hoisting (feee3b5): each workflow source a module of its own, instantiated for every run. */
const before26i: OursProfile = { ...prebundled, name: 'before-26i', srcRef: 'feee3b5' };

/** `prebundled` on the code before the eighth round (2195c5f): conversation nodes through a temporary file, a read's root made and resolved at every call. */
const before26j: OursProfile = { ...prebundled, name: 'before-26j', srcRef: '2195c5f' };

/** `prebundled` on the code before the ninth round (b0f655c): every model call's request encoded whole, and copied to follow a redirect. */
const before26k: OursProfile = { ...prebundled, name: 'before-26k', srcRef: 'b0f655c' };

/** `prebundled` on the code before the fourteenth round (272644b): a prebuilt bundle compiled and run once in the main thread for a debugger (the SDK's `parseWorkflowCode`). */
const before26n: OursProfile = { ...prebundled, name: 'before-26n', srcRef: '272644b' };

/** `prebundled` on the code before the fifteenth round (a7d5367): an activation's protobuf converters built when the first activation after the start needs them. */
const before26o: OursProfile = { ...prebundled, name: 'before-26o', srcRef: 'a7d5367' };

/** `prebundled` with the SDK starting its workflow thread in `Worker.create`, not at the top of the process (src/worker/early-thread.ts). */
const noEarlyThread: OursProfile = { ...prebundled, name: 'no-early-thread', earlyThread: false };

/** Issue 26's second round one at a time: conversation nodes put without a stat, shard folders made once (6d5d8db). */
const cut26Blobs: OursProfile = { ...prebundled, name: 'cut-26-blobs', srcRef: '6d5d8db' };

/** `prebundled` with blobs written without an fsync (file and folder): what making a conversation node durable costs a step. */
const noFsync: OursProfile = { ...prebundled, name: 'no-fsync', blobFsync: false };

/** `prebundled` with a conversation node a file of its own, as before 2026-11-27, not appended to a pack of the worker's. */
const nodeFiles: OursProfile = { ...prebundled, name: 'node-files', blobPacks: false };

/** `prebundled` with the runtime logging at WARN: the per-transition INFO lines are made (a sink call each) but not written. */
const warnLogs: OursProfile = { ...prebundled, name: 'warn-logs', logLevel: 'WARN' };

/** `prebundled` on a dev server with Temporal's own task queue read rates (20 a second), not the project's 1000. */
const stockServer: OursProfile = {
  ...prebundled,
  name: 'stock-server',
  server: { dynamicConfig: LOCAL_QUEUE_POLL_RATES.map((setting) => setting.replace(/=\d+$/, '=20')) },
};

/** `prebundled` on a dev server with Temporal's own timer time shift (1 s), not the project's 100 ms: a retry timer due sooner fires about a second after the timer queue's last read. */
const stockTimerShift: OursProfile = {
  ...prebundled,
  name: 'stock-timer-shift',
  server: { dynamicConfig: [LOCAL_TIMER_SHIFT.replace(/"[^"]*"$/, '"1s"')] },
};

/** `prebundled` on a dev server whose Go garbage collector runs a quarter as often (GOGC=400; Go's default is 100). */
const goGc: OursProfile = { ...prebundled, name: 'go-gc', server: { env: { GOGC: '400' } } };

/** `prebundled` on a dev server limited to one OS thread running Go code at a time (GOMAXPROCS=1; Go's default is the cores). */
const goOneProc: OursProfile = { ...prebundled, name: 'go-one-proc', server: { env: { GOMAXPROCS: '1' } } };

/** Both Go runtime settings. */
const goTuned: OursProfile = { ...prebundled, name: 'go-tuned', server: { env: { GOGC: '400', GOMAXPROCS: '1' } } };

/** `prebundled` with the worker's Rust core on one tokio worker thread (tokio's default is one a core). */
const tokioOne: OursProfile = { ...prebundled, name: 'tokio-one', env: { TOKIO_WORKER_THREADS: '1' } };

/** `prebundled` with workflows run on the worker's main thread (the SDK's `debugMode`): no activation messages between threads, no execution time limit. */
const mainThread: OursProfile = { ...prebundled, name: 'main-thread', workerOptions: { debugMode: true } };

/**
 * `prebundled` with model calls heartbeating every 250 ms (issue 27's cadence) / 500 ms (issue 26's until its tenth
 * round) / every second instead of MODEL_HEARTBEAT_MS (800 ms): what the beats cost the server.
 */
const heartbeat250: OursProfile = { ...prebundled, name: 'heartbeat-250', modelHeartbeatMs: 250 };
const heartbeat500: OursProfile = { ...prebundled, name: 'heartbeat-500', modelHeartbeatMs: 500 };
const heartbeat1s: OursProfile = { ...prebundled, name: 'heartbeat-1s', modelHeartbeatMs: 1_000 };

/** `prebundled` on the code before the 1.0 baseline (ca2ec2b): nine machine versions and nineteen patches, read per run (issue 48). */
const before10: OursProfile = { ...prebundled, name: 'before-1.0', srcRef: 'ca2ec2b' };

/** The product before its worker went back to the SDK's public API (issue 49): `AgentSdkWorker`, the early thread, the promise-stack hook. */
const beforePublicApi: OursProfile = { ...prebundled, name: 'before-public-api', srcRef: '3b86d6b' };
/** `prebundled` with the input schemas shared across runs (`oncePerWorker`, preloaded), before issue 49 removed it (f08b22c). */
const oncePerWorker: OursProfile = { ...prebundled, name: 'once-per-worker', srcRef: 'f08b22c' };

/** `prebundled` with 8 workflow task slots instead of the SDK's 40: the backlog waits on the server's fair task queue, not in the worker (issue 52, figure (i)). */
const taskSlots8: OursProfile = { ...prebundled, name: 'task-slots-8', workerOptions: { maxConcurrentWorkflowTaskExecutions: 8 } };
/** The same with 40, the SDK's default and the product's, named so that the two sit side by side in one run. */
const taskSlots40: OursProfile = { ...prebundled, name: 'task-slots-40', workerOptions: { maxConcurrentWorkflowTaskExecutions: 40 } };

export const PROFILES: Record<string, OursProfile> = {
  before,
  baseline,
  prebundled,
  'prebundled-tsx': prebundledTsx,
  server,
  eager,
  'local-model': localModel,
  'local-model-slots': localModelSlots,
  'semi-space-64': semiSpace64,
  'no-heap-tuning': noHeapTuning,
  'one-partition': onePartition,
  'eager-one-partition': eagerOnePartition,
  'before-server': beforeServer,
  'before-inline': beforeInline,
  'before-preload': beforePreload,
  'before-26': beforeIssue26,
  'cut-26-native': cut26Native,
  'cut-26-schemas': cut26Schemas,
  'before-26b': before26b,
  'before-26c': before26c,
  'before-26d': before26d,
  'before-26e': before26e,
  'before-26f': before26f,
  'before-26g': before26g,
  'before-26h': before26h,
  'before-26i': before26i,
  'before-26j': before26j,
  'before-26k': before26k,
  'before-26n': before26n,
  'before-26o': before26o,
  'no-early-thread': noEarlyThread,
  'cut-26-blobs': cut26Blobs,
  'no-journal': noJournal,
  'no-fsync': noFsync,
  'node-files': nodeFiles,
  'warn-logs': warnLogs,
  'no-source-maps': noSourceMaps,
  'stock-server': stockServer,
  'stock-timer-shift': stockTimerShift,
  'go-gc': goGc,
  'go-one-proc': goOneProc,
  'go-tuned': goTuned,
  'tokio-one': tokioOne,
  'main-thread': mainThread,
  'heartbeat-250': heartbeat250,
  'heartbeat-500': heartbeat500,
  'heartbeat-1s': heartbeat1s,
  'before-1.0': before10,
  'before-public-api': beforePublicApi,
  'once-per-worker': oncePerWorker,
  'task-slots-8': taskSlots8,
  'task-slots-40': taskSlots40,
};

/** The profile the bench reports as "ours": the product as its Docker image runs it, on a dev server as it comes. */
export const TUNED = 'prebundled';
