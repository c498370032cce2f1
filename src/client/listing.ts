/** Listing agent runs from visibility, raw (no memo decoded), for `AgentClient.list` and the gateway's run list. */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AGENT_STATE_SEARCH_ATTRIBUTE, SCHEDULED_BY_SEARCH_ATTRIBUTE, WORKFLOW_TYPE } from '../common/constants';
import { AgentState } from '../common/states';
import { InvalidAgentInputError } from './errors';
import { tsToDate } from '../common/proto-time';

const DEFAULT_LIST_LIMIT = 20;

/** Runs a page of a listing asks the server for: each run's memo holds its stored state (a few kB), and 200 keep a reply under gRPC's 4 MB. */
const LIST_PAGE_SIZE = 200;

/**
 * The raw listing of `query`, page by page: unlike the SDK's `workflow.list`, it decodes no memo, so one run whose memo
 * this client cannot decode (another key, another blob store) cannot fail the whole list.
 */
export async function* rawExecutions(client: Client, query: string, pageSize = LIST_PAGE_SIZE): AsyncGenerator<temporal.api.workflow.v1.IWorkflowExecutionInfo> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, query, pageSize, nextPageToken });
    yield* page.executions ?? [];
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

/**
 * Leaves out the executions a run closed by continuing as new: each is a part of one run, which the listing shows once,
 * as its open (or last) execution. Their AgentState is the state they continued in, not the run's.
 */
export const CURRENT_EXECUTIONS = 'ExecutionStatus != "ContinuedAsNew"';

/** A listed execution's status as the SDK names it: `RUNNING`, `COMPLETED`, `CONTINUED_AS_NEW`, ... */
export const executionStatus = (e: temporal.api.workflow.v1.IWorkflowExecutionInfo): string =>
  (temporal.api.enums.v1.WorkflowExecutionStatus[e.status ?? 0] ?? '').replace(/^WORKFLOW_EXECUTION_STATUS_/, '');

/** One run as `list` reports it. */
export interface AgentRunSummary {
  workflowId: string;
  runId: string;
  /** Temporal execution status: `RUNNING`, `COMPLETED`, `FAILED`, `TERMINATED`, ... */
  status: string;
  /** The `AgentState` search attribute: the run's state at its last transition. */
  agentState: string | undefined;
  startTime: Date;
  /** When the run closed; `undefined` while it is open. */
  closeTime?: Date;
  /** The schedule that started the run (Temporal's `TemporalScheduledById`); `undefined` for a run started otherwise. */
  scheduleId?: string;
}

/** Options of `AgentClient.list`. */
export interface ListOptions {
  /** Only runs whose `AgentState` is this state. */
  state?: string;
  /** Most runs returned. @default 20 */
  limit?: number;
}

/**
 * Agent runs in visibility as the server orders them (its SQL store takes no ORDER BY): open runs first, newest
 * first, then closed runs, the most recently closed first. Optionally only those in one `AgentState`.
 */
export async function listRuns(client: Client, opts: ListOptions = {}): Promise<AgentRunSummary[]> {
  const limit = opts.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidAgentInputError(`Invalid list options: limit: must be a positive integer`);
  if (opts.state !== undefined && !(Object.values(AgentState) as string[]).includes(opts.state)) {
    throw new InvalidAgentInputError(`Invalid list options: state: must be one of ${Object.values(AgentState).join(', ')}`);
  }
  const query = `WorkflowType="${WORKFLOW_TYPE}" AND ${CURRENT_EXECUTIONS}` + (opts.state ? ` AND ${AGENT_STATE_SEARCH_ATTRIBUTE}="${opts.state}"` : '');
  // The raw listing: the SDK's decodes every run's memo, and one run whose memo this client cannot decode (another
  // key, another blob store) would fail the whole list. Search attributes are never encoded.
  const runs: AgentRunSummary[] = [];
  for await (const e of rawExecutions(client, query, Math.min(limit, LIST_PAGE_SIZE))) {
    const state = e.searchAttributes?.indexedFields?.[AGENT_STATE_SEARCH_ATTRIBUTE];
    const value: unknown = state ? defaultPayloadConverter.fromPayload(state) : undefined;
    const scheduled = e.searchAttributes?.indexedFields?.[SCHEDULED_BY_SEARCH_ATTRIBUTE];
    const scheduleId: unknown = scheduled ? defaultPayloadConverter.fromPayload(scheduled) : undefined;
    runs.push({
      workflowId: e.execution?.workflowId ?? '',
      runId: e.execution?.runId ?? '',
      status: executionStatus(e),
      agentState: typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined,
      startTime: tsToDate(e.startTime) ?? new Date(0),
      ...(e.closeTime ? { closeTime: tsToDate(e.closeTime) } : {}),
      ...(typeof scheduleId === 'string' ? { scheduleId } : {}),
    });
    if (runs.length >= limit) return runs;
  }
  return runs;
}
