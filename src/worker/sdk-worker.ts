/**
 * The SDK's `Worker`, with changes to how it starts:
 * - its workflow thread is the product's (early-thread.ts, workflow-thread-main.ts): the SDK's, with a promise hook
 *   that formats a promise's stack only when a query reads it (promise-stacks.ts); the one `startWorkflowThreadEarly`
 *   started at the top of the process when there is one, a new one otherwise;
 * - a prebuilt bundle (`workflowBundle: { codePath }`) is read without the SDK's debugger preload (`preparedBundle`);
 * - while its workflow thread takes the bundle, the main thread builds what its first tasks need (`prepareForFirstTasks`).
 * Everything else, and every other configuration (debug mode, a pool of threads, a bundle built at boot), is the
 * SDK's own.
 *
 * `createWorkflowCreator` and `getOrCreateBundle` are the SDK's protected hooks for this. The `init` message below is
 * the one the SDK's `ThreadedVMWorkflowCreator.create` sends (@temporalio/worker 1.24, lib/workflow/threaded-vm.js);
 * the package's version is pinned, and every workflow test runs through this path.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Worker, type CompiledWorkerOptions, type Logger } from '@temporalio/worker';
import { isPathBundleOption } from '@temporalio/worker/lib/worker-options';
import { ThreadedVMWorkflowCreator, WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';
import { dropEarlyWorkflowThread, takeWorkflowThread } from './early-thread';
import { setUpTaskTypes } from './message-types';

export class AgentSdkWorker extends Worker {
  /**
   * A prebuilt bundle's code, source map and file name, as the SDK's `parseWorkflowCode` gives them, but without its
   * preload: that compiles the whole bundle and runs it in a throwaway context of the main thread, so that a
   * debugger's breakpoints resolve (its comment says so), and keeps both for 10 s. Outside debug mode nothing uses
   * them, and they cost a restarted worker about 50 ms of its main thread before the workflow thread gets the bundle
   * (BENCHMARKS.md, issue 26, figure (d)). Debug mode, code given inline, a bundle built at boot, and the options the
   * SDK warns about beside a bundle all go the SDK's way.
   */
  protected static override async getOrCreateBundle(
    compiledOptions: CompiledWorkerOptions,
    logger: Logger,
  ): Promise<WorkflowBundleWithSourceMapAndFilename | undefined> {
    const bundle = compiledOptions.workflowBundle;
    const sdkWay = !bundle || !isPathBundleOption(bundle) || compiledOptions.debugMode || compiledOptions.workflowsPath || compiledOptions.bundlerOptions || compiledOptions.interceptors.workflowModules.length;
    if (sdkWay) return super.getOrCreateBundle(compiledOptions, logger);
    return preparedBundle(await readFile(bundle.codePath, 'utf8'), bundle.codePath);
  }

  protected static override async createWorkflowCreator(
    workflowBundle: WorkflowBundleWithSourceMapAndFilename,
    options: CompiledWorkerOptions,
    logger: Logger,
  ): Promise<WorkflowCreator> {
    const reuseV8Context = options.reuseV8Context ?? true;
    // The SDK's own threads for anything but its default: one thread, one reused context, not in debug mode.
    const oneThread = !options.debugMode && reuseV8Context && options.workflowThreadPoolSize === 1;
    if (!oneThread) {
      await dropEarlyWorkflowThread();
      return super.createWorkflowCreator(workflowBundle, options, logger);
    }
    const thread = takeWorkflowThread();
    const { patchActivationCallback } = options;
    const client = new WorkerThreadClient(thread, logger, patchActivationCallback);
    const initialized = client.send({
      type: 'init',
      workflowBundle,
      isolateExecutionTimeoutMs: options.isolateExecutionTimeoutMs,
      reuseV8Context,
      registeredActivityNames: new Set(options.activities.keys()),
      hasPatchActivationCallback: patchActivationCallback !== undefined,
    });
    prepareForFirstTasks(logger);
    await initialized;
    return new ThreadedVMWorkflowCreator([client]);
  }
}

/**
 * Run while the workflow thread compiles and runs the bundle (tens of ms), when the main thread would only wait: what
 * its first workflow and activity tasks would otherwise build on the critical path of a restart. The converters of
 * the tasks' messages (message-types.ts), and Node's `fetch`, which loads its HTTP client (undici, about 20 ms) at its
 * first call: a model call's. Reading `Headers` loads the same module. Only a head start: should it fail (another
 * protobufjs), the tasks build what they need as before, and the worker starts all the same.
 */
function prepareForFirstTasks(logger: Logger): void {
  try {
    setUpTaskTypes();
    void globalThis.Headers;
  } catch (error) {
    logger.warn('could not build the protobuf converters of the first tasks ahead of them; they will build them', { error: String(error) });
  }
}

const SOURCE_MAP_COMMENT = '//# sourceMappingURL=data:';

/**
 * What the SDK's `parseWorkflowCode` returns for a bundle read from `codePath`, without compiling it: the inline source
 * map decoded, and the map's `file` set to the bundle's absolute path (which debuggers and the sandbox's stack traces
 * key on), re-encoded into the code when it differed.
 */
export function preparedBundle(code: string, codePath: string): WorkflowBundleWithSourceMapAndFilename {
  const at = code.lastIndexOf(SOURCE_MAP_COMMENT);
  const base64At = at > 0 ? code.indexOf('base64,', at) : -1;
  if (base64At < 0) throw new Error(`The workflow bundle ${codePath} has no inline source map: build it with \`npm run build:workflows\``);
  const sourceMap = JSON.parse(Buffer.from(code.slice(base64At + 'base64,'.length).trimEnd(), 'base64').toString());
  const filename = path.resolve(process.cwd(), codePath);
  if (filename === codePath) return { code, sourceMap, filename };
  sourceMap.file = filename;
  const fixed = `${code.slice(0, at)}\n${SOURCE_MAP_COMMENT}application/json;base64,${Buffer.from(JSON.stringify(sourceMap)).toString('base64')}`;
  return { code: fixed, sourceMap, filename };
}
