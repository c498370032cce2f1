/**
 * A throwaway run in a fresh workflow thread, before its first real workflow task.
 *
 * A new worker's first workflow task is slow for reasons that have nothing to do with the run: the thread's code is
 * cold (nothing compiled yet), protobufjs builds each activation message's decoder on first use, the source map of the
 * bundle is parsed at the first promise (the SDK maps a stack for each), and the run's modules and schemas are
 * evaluated for the first time. After a restart that task replays the whole run, and the next step waits for it
 * (BENCHMARKS.md, issue 26's sixth round: 250 ms of the graceful restart).
 *
 * So the worker starts one run of `agentRun` in the thread as soon as the thread has the bundle, activates it once
 * (the run starts and asks for its first model call), and disposes of it. Nothing leaves the thread: no task, no
 * command, no log line (its sink calls are never collected). The thread handles its messages in order, so a real
 * workflow task that comes meanwhile waits for the end of the warm-up, and finds the thread warm.
 *
 * This speaks the SDK's thread protocol (`VMWorkflowThreadProxy`, @temporalio/worker 1.24, pinned), as
 * `AgentSdkWorker` does. A warm-up that fails is only logged: the worker works the same without it.
 */
import { defaultPayloadConverter, TypedSearchAttributes } from '@temporalio/common';
import { coresdk } from '@temporalio/proto';
import type { Logger } from '@temporalio/worker';
import { createUnsafeRandomSource } from '@temporalio/workflow/lib/random-helpers';
import { VMWorkflowThreadProxy, type WorkerThreadClient } from '@temporalio/worker/lib/workflow/threaded-vm';
import type { WorkflowInfo } from '@temporalio/workflow';
import { WORKFLOW_TYPE } from '../common/constants';
import type { AgentRunInput } from '../common/input';

/** The run id of the warm-up run; no real run has one like it (the server's run ids are UUIDs). */
export const WARM_UP_RUN_ID = 'agent-worker-warm-up';

/** Resolves with the warm-up run's first activation completion, or undefined when the warm-up failed (logged). */
export async function warmUpWorkflowThread(
  client: WorkerThreadClient,
  where: { taskQueue: string; namespace: string },
  logger: Logger,
): Promise<coresdk.workflow_completion.IWorkflowActivationCompletion | undefined> {
  const nowMs = Date.now();
  const timestamp = { seconds: Math.floor(nowMs / 1000), nanos: (nowMs % 1000) * 1_000_000 };
  const runId = WARM_UP_RUN_ID;
  const info: WorkflowInfo = {
    workflowId: runId,
    runId,
    workflowType: WORKFLOW_TYPE,
    searchAttributes: {},
    typedSearchAttributes: new TypedSearchAttributes(),
    taskQueue: where.taskQueue,
    namespace: where.namespace,
    firstExecutionRunId: runId,
    originalExecutionRunId: runId,
    startTime: new Date(nowMs),
    runStartTime: new Date(nowMs),
    taskTimeoutMs: 10_000,
    attempt: 1,
    historyLength: 3,
    historySize: 0,
    continueAsNewSuggested: false,
    targetWorkerDeploymentVersionChanged: false,
    currentBuildId: '',
    // `now` and `random` are functions, which cannot cross to the thread: the SDK removes them before sending, and
    // sets them again inside.
    unsafe: { now: () => nowMs, isReplaying: false, isReplayingHistoryEvents: false, random: createUnsafeRandomSource(Math.random) },
    priority: {},
  };
  const input: AgentRunInput = { prompt: 'warm-up' };
  const activation = coresdk.workflow_activation.WorkflowActivation.fromObject({
    runId,
    timestamp,
    isReplaying: false,
    historyLength: 3,
    historySizeBytes: 0,
    jobs: [
      {
        initializeWorkflow: {
          workflowType: WORKFLOW_TYPE,
          workflowId: runId,
          arguments: [defaultPayloadConverter.toPayload(input)],
          randomnessSeed: 1,
          firstExecutionRunId: runId,
          attempt: 1,
          startTime: timestamp,
          workflowTaskTimeout: { seconds: 10 },
        },
      },
    ],
  });
  const started = Date.now();
  try {
    const run = await VMWorkflowThreadProxy.create(client, { info, randomnessSeed: [0, 0, 0, 0, 0, 0, 0, 1], now: nowMs, showStackTraceSources: false });
    try {
      const completion = await run.activate(activation);
      logger.debug('workflow thread warmed up', { ms: Date.now() - started });
      return completion;
    } finally {
      await run.dispose();
    }
  } catch (err) {
    logger.debug('workflow thread warm-up failed; the first workflow task will be slower', { error: String(err) });
    return undefined;
  }
}
