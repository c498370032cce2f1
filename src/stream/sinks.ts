/**
 * The worker's end of the workflow's sinks: `stream` (common/stream.ts), `modelCalls` and `runHooks`
 * (common/sinks.ts); not called during replay.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type * as WorkerModule from '@temporalio/worker';
import type { ModelCallSinks, RunHookSinks, StopsModelCalls } from '../common/sinks';
import { runHookSinks, type HookLog, type RunHooks } from './hooks';
import type { StreamSinks } from '../common/stream';
import type { LiveStream } from './publisher';

/**
 * The runtime's logger, loaded when a worker is given hooks: `@temporalio/worker` (and its native module) is not loaded
 * by the client entry, which re-exports this folder (test/package.test.ts). Loaded then, not when a hook fails: a hook's
 * hang warning may fire after its test file's module registry is torn down.
 */
const runtimeLogger = () => (require('@temporalio/worker') as typeof WorkerModule).Runtime.instance().logger;

function hookLog(hooks: RunHooks | undefined): () => HookLog {
  const logger = hooks ? runtimeLogger() : undefined;
  return () => logger ?? runtimeLogger();
}

/**
 * Registered on every worker, with or without a stream, so that the workflow's calls are never unregistered sinks.
 * `calls`: the model requests this worker makes, which the `modelCalls` sink stops (absent: it stops none); `hooks`:
 * the worker's lifecycle hooks (stream/hooks.ts; absent: none), their failures logged by the runtime's logger.
 */
export function streamSinks(stream: LiveStream | undefined, calls?: StopsModelCalls, hooks?: RunHooks): InjectedSinks<StreamSinks & ModelCallSinks & RunHookSinks> {
  return {
    ...runHookSinks(hooks, hookLog(hooks)),
    stream: { publish: { fn: (info, events) => stream?.publish(info.workflowId, events), callDuringReplay: false } },
    modelCalls: { stop: { fn: (info, call) => void calls?.stop(info.workflowId, info.runId, call), callDuringReplay: false } },
  };
}
