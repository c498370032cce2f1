/**
 * Where a client starts a background run (`priority` 8 and 9, a tenant past its burst): the fleet's background task
 * queue (`backgroundTaskQueue`) while a worker polls it, so that the batch's workflow tasks wait on the server and in a
 * worker's few background slots instead of in front of other tenants' tasks; else the fleet's own queue, at Temporal's
 * last priority key (workers of an older release, a worker of your own that polls one queue, or
 * `AGENT_BACKGROUND_WORKFLOW_TASK_SLOTS=0`): a run never waits on a queue no worker polls. The server is asked at
 * most once a minute.
 */
import type { Client } from '@temporalio/client';
import { BACKGROUND_PRIORITY, backgroundTaskQueue } from '../common/fairness';
import { taskQueuePollers } from './pollers';

/** How long an answer of the server (whether a worker polls the background queue) is used before asking again. */
const BACKGROUND_POLLERS_RECHECK_MS = 60_000;

export class BackgroundQueue {
  private known?: { at: number; polled: boolean };
  private asking?: Promise<boolean>;

  constructor(
    private readonly client: Client,
    /** The fleet's task queue. */
    readonly taskQueue: string,
  ) {}

  /** The task queue a run of `priority` starts on. */
  async taskQueueOf(priority: number | undefined): Promise<string> {
    if (priority === undefined || priority < BACKGROUND_PRIORITY) return this.taskQueue;
    return (await this.polled()) ? backgroundTaskQueue(this.taskQueue) : this.taskQueue;
  }

  private polled(): Promise<boolean> {
    if (this.known && Date.now() - this.known.at < BACKGROUND_POLLERS_RECHECK_MS) return Promise.resolve(this.known.polled);
    // Concurrent starts share one question.
    this.asking ??= this.ask()
      .then((polled) => {
        this.known = { at: Date.now(), polled };
        return polled;
      })
      .finally(() => (this.asking = undefined));
    return this.asking;
  }

  /** Whether the server lists a worker polling the background queue's workflow tasks; no (the fleet's queue) if it cannot say. */
  private async ask(): Promise<boolean> {
    const pollers = await taskQueuePollers(this.client, backgroundTaskQueue(this.taskQueue), 'workflow').catch(() => []);
    return pollers.length > 0;
  }
}
