/** What the histories of the runs say: nondeterminism, workflow task failures and timeouts, activity timeouts. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client, WorkflowHandle } from '@temporalio/client';

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

// Wire value of temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR.
const NON_DETERMINISTIC_CAUSE = 24;
const FETCH_CONCURRENCY = 8;

export interface HistoryFigures {
  historiesRead: number;
  /** WorkflowTaskFailed events caused by nondeterminism: must be 0. */
  nondeterminismErrors: number;
  nondeterminismRuns: string[];
  /** All WorkflowTaskFailed events, whatever the cause. */
  workflowTaskFailures: number;
  workflowTaskFailureMessages: string[];
  /** Workflow tasks that timed out (a killed worker held them). */
  workflowTaskTimeouts: number;
  /** Activity attempts beyond the first (a killed worker held the earlier attempt until it timed out). */
  activityRetries: number;
  historyReadErrors: string[];
}

export async function historyFigures(client: Client, runIds: string[]): Promise<HistoryFigures> {
  const figures: HistoryFigures = {
    historiesRead: 0,
    nondeterminismErrors: 0,
    nondeterminismRuns: [],
    workflowTaskFailures: 0,
    workflowTaskFailureMessages: [],
    workflowTaskTimeouts: 0,
    activityRetries: 0,
    historyReadErrors: [],
  };
  let next = 0;
  const lane = async () => {
    while (next < runIds.length) {
      const runId = runIds[next++];
      const history = await fetchHistory(client, runId).catch((err: unknown) => {
        figures.historyReadErrors.push(`${runId}: ${String(err)}`);
        return undefined;
      });
      if (history) addHistory(figures, runId, history);
    }
  };
  await Promise.all(Array.from({ length: FETCH_CONCURRENCY }, lane));
  return figures;
}

async function fetchHistory(client: Client, runId: string): Promise<History> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.workflow.getHandle(runId).fetchHistory();
    } catch (err) {
      if (attempt >= 3) throw err;
      await sleep(1_000);
    }
  }
}

function addHistory(figures: HistoryFigures, runId: string, history: History): void {
  figures.historiesRead++;
  for (const event of history.events ?? []) {
    const failed = event.workflowTaskFailedEventAttributes;
    if (failed) {
      figures.workflowTaskFailures++;
      const message = failed.failure?.message ?? '';
      figures.workflowTaskFailureMessages.push(`${runId}: cause ${failed.cause ?? '?'}: ${message.slice(0, 300)}`);
      if (failed.cause === NON_DETERMINISTIC_CAUSE || /nondetermin/i.test(message)) {
        figures.nondeterminismErrors++;
        figures.nondeterminismRuns.push(runId);
      }
    }
    if (event.workflowTaskTimedOutEventAttributes) figures.workflowTaskTimeouts++;
    const attempt = event.activityTaskStartedEventAttributes?.attempt;
    if (attempt && attempt > 1) figures.activityRetries += attempt - 1;
  }
}
