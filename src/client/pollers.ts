/** The pollers Temporal lists on a task queue: who has asked it for workflow or activity tasks lately. */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const TYPES = {
  workflow: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  activity: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
};

/** The pollers of `taskQueue`'s workflow or activity tasks, each with its identity and last access; rejects as the server does. */
export async function taskQueuePollers(client: Pick<Client, 'workflowService'> & { options: { namespace: string } }, taskQueue: string, type: keyof typeof TYPES): Promise<temporal.api.taskqueue.v1.IPollerInfo[]> {
  const described = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: TYPES[type],
  });
  return described.pollers ?? [];
}
