/**
 * Tuning profiles of this product, cumulative from the production defaults. Each is only options the bench passes:
 * worker options, the runtime log level, dev server flags, a prebuilt bundle, and a workflow interceptor. None
 * changes src/. `tuned` is what the bench reports as the product; the others show what each change bought.
 */
import type { OursProfile } from './systems';

/** Exactly what `npm run worker` does today: SDK default worker options, INFO logs, bundling at boot. */
const baseline: OursProfile = { name: 'baseline' };

/**
 * Model calls wait on the network, not the CPU: the SDK's 100 activity slots cap 1,000 concurrent runs at 100 calls in
 * flight. Workflow task slots stay at the SDK's 40: more only queue tasks inside a CPU-bound worker until they time out.
 */
const slots: OursProfile = {
  ...baseline,
  name: 'slots',
  workerOptions: {
    maxConcurrentActivityTaskExecutions: 2_000,
    maxConcurrentLocalActivityExecutions: 2_000,
    maxCachedWorkflows: 2_000,
    workflowTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
    activityTaskPollerBehavior: { type: 'autoscaling', minimum: 2, maximum: 100, initial: 10 },
    // A graceful stop (a deploy) lets the model calls in flight finish instead of cancelling and redoing them.
    shutdownGraceTime: '1 minute',
  },
};

/** INFO logs every transition of every run through the runtime's logger: WARN keeps the errors. */
const quiet: OursProfile = { ...slots, name: 'quiet', logLevel: 'WARN' };

/** The workflow bundle built once at deploy time: a restarted worker does not spend seconds in webpack. */
const prebundled: OursProfile = { ...quiet, name: 'prebundled', prebundle: true };

/** `readFile` is pure and fast: as a local activity it costs no task-queue round trip and no extra workflow task. */
const localTools: OursProfile = { ...prebundled, name: 'local-tools', localTools: true };

/** The dev server's SQLite with a larger page cache and memory-mapped I/O, and eager activity dispatch on. */
const server: OursProfile = {
  ...localTools,
  name: 'server',
  server: {
    pragmas: ['cache_size=-65536', 'mmap_size=268435456', 'temp_store=memory'],
    dynamicConfig: ['system.enableActivityEagerExecution=true'],
  },
};

/**
 * Proposed src change, measured on a patched copy (bench/proposals/coalesce-upserts.patch): upsert the AgentState
 * search attribute once before the run waits, not on every transition (four per step), so each step costs the server
 * fewer history events and visibility writes.
 */
const coalesced: OursProfile = { ...server, name: 'coalesced', proposals: ['coalesce-upserts'] };

/** Proposed src change (bench/proposals/lazy-heartbeat.patch): the model call's first heartbeat after a second, not at once. */
const lazyHeartbeat: OursProfile = { ...server, name: 'lazy-heartbeat', proposals: ['lazy-heartbeat'] };

/**
 * All proposed src changes together: the two above, and the model call's heartbeat timeout at 5 s instead of 15 s
 * (bench/proposals/heartbeat-timeout-5s.patch), so a crashed worker's call is retried three times sooner.
 */
const proposed: OursProfile = { ...server, name: 'proposed', proposals: ['coalesce-upserts', 'lazy-heartbeat', 'heartbeat-timeout-5s'] };

export const PROFILES: Record<string, OursProfile> = {
  baseline,
  slots,
  quiet,
  prebundled,
  'local-tools': localTools,
  server,
  coalesced,
  'lazy-heartbeat': lazyHeartbeat,
  proposed,
};

/** The profile the bench reports as "ours" unless told otherwise. */
export const TUNED = 'server';

/** The same worker options for Temporal's ai-sdk peer, so the two Temporal systems are compared tuned alike. */
export const PEER_WORKER_OPTIONS = slots.workerOptions;
