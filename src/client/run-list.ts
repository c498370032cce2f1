/**
 * The run list the gateway serves (`GET /v1/runs`), `AgentClient.search` and `agent list` with a filter: `AgentClient.list`'s rows with what the page shows and searches,
 * read from each listing's memo (no query to any run): the prompt and agent (`agentRun` memo, set at start), cost and
 * tokens (`agentState` memo, stored when the run waits for a person or ends), the parent and the fork origin.
 *
 * State, start time and parent filter in the server's visibility query; the text, the agent and `forkOf` are not
 * search attributes, so they filter the listings here, scanning at most SCAN_LIMIT runs.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { decodeMap } from '../codec/payloads';
import { tsToDate } from '../common/proto-time';
import { CURRENT_EXECUTIONS, executionStatus, rawExecutions } from './listing';
import { AGENT_RUN_MEMO, AGENT_STATE_MEMO, AGENT_STATE_SEARCH_ATTRIBUTE, AGENT_TENANT_SEARCH_ATTRIBUTE, SCHEDULED_BY_SEARCH_ATTRIBUTE, WORKFLOW_TYPE } from '../common/constants';
import type { RunStateView } from '../common/view';

/** Most runs read to answer a search filtered here (text, agent, forkOf). */
export const SCAN_LIMIT = 1_000;
const DEFAULT_LIMIT = 20;

export interface RunListFilter {
  state?: string;
  limit?: number;
  q?: string;
  agent?: string;
  since?: string;
  until?: string;
  parent?: string;
  forkOf?: string;
  /** Runs this schedule started (Temporal's `TemporalScheduledById`). */
  schedule?: string;
  /** Only the runs of this tenant (`AgentTenant`): the gateway sets it for a signed identity, never from the query. */
  tenant?: string;
}

/** One row of the list: `AgentRunSummary`'s fields and what the memo holds (null when the run has none, e.g. one started elsewhere). */
export interface RunListEntry {
  workflowId: string;
  runId: string;
  /** Temporal's status of the workflow execution (an ABORTED run's is COMPLETED); the run's own is `agentState`. */
  executionStatus: string;
  agentState: string | undefined;
  startTime: string;
  closeTime?: string;
  /** Closed runs: from start to close. */
  durationMs: number | null;
  prompt: string | null;
  agent: string | null;
  origin: { workflowId: string; step: number } | null;
  parentWorkflowId: string | null;
  /** The schedule that started the run (Temporal's `TemporalScheduledById`); null for a run started otherwise. */
  scheduleId: string | null;
  /** As of the run's last stored copy (waiting for a person, or ended); null before it stored one. */
  costUsd: number | null;
  totalTokens: number | null;
}

/** The visibility query for the filters the server can apply; values are quoted as the SQL-like grammar needs. */
export function visibilityQuery(f: RunListFilter): string {
  const quote = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  const parts = [`WorkflowType=${quote(WORKFLOW_TYPE)}`, CURRENT_EXECUTIONS];
  if (f.tenant !== undefined) parts.push(`${AGENT_TENANT_SEARCH_ATTRIBUTE}=${quote(f.tenant)}`);
  if (f.state) parts.push(`${AGENT_STATE_SEARCH_ATTRIBUTE}=${quote(f.state)}`);
  if (f.since) parts.push(`StartTime >= ${quote(new Date(f.since).toISOString())}`);
  if (f.until) parts.push(`StartTime <= ${quote(new Date(f.until).toISOString())}`);
  if (f.parent) parts.push(`ParentWorkflowId = ${quote(f.parent)}`);
  if (f.schedule) parts.push(`${SCHEDULED_BY_SEARCH_ATTRIBUTE} = ${quote(f.schedule)}`);
  return parts.join(' AND ');
}

export async function searchRuns(client: Client, f: RunListFilter): Promise<RunListEntry[]> {
  const limit = f.limit ?? DEFAULT_LIMIT;
  const filteredHere = f.q !== undefined || f.agent !== undefined || f.forkOf !== undefined;
  const text = f.q?.toLowerCase();
  const rows: RunListEntry[] = [];
  let scanned = 0;
  for await (const e of rawExecutions(client, visibilityQuery(f), Math.min(filteredHere ? 100 : limit, 100))) {
    const row = await entry(client, e);
    scanned++;
    const matches =
      (!text || row.workflowId.toLowerCase().includes(text) || (row.prompt ?? '').toLowerCase().includes(text)) &&
      (f.agent === undefined || row.agent === f.agent) &&
      (f.forkOf === undefined || row.origin?.workflowId === f.forkOf);
    if (matches) rows.push(row);
    if (rows.length >= limit || scanned >= SCAN_LIMIT) break;
  }
  return rows;
}

type Execution = Parameters<typeof executionStatus>[0];

/** A keyword search attribute of a listed execution (never encoded); undefined when unset. */
function keyword(e: Execution, name: string): string | undefined {
  const raw = e.searchAttributes?.indexedFields?.[name];
  const value: unknown = raw ? defaultPayloadConverter.fromPayload(raw) : undefined;
  return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
}

async function entry(client: Client, e: Execution): Promise<RunListEntry> {
  const start = tsToDate(e.startTime) ?? new Date(0);
  const close = tsToDate(e.closeTime);
  const memo = await decodedMemo(client, e);
  const run = memo[AGENT_RUN_MEMO] as { prompt?: string; agent?: string | null; origin?: RunListEntry['origin'] } | undefined;
  const stored = memo[AGENT_STATE_MEMO] as Partial<RunStateView> | undefined;
  return {
    workflowId: e.execution?.workflowId ?? '',
    runId: e.execution?.runId ?? '',
    executionStatus: executionStatus(e),
    agentState: keyword(e, AGENT_STATE_SEARCH_ATTRIBUTE),
    startTime: start.toISOString(),
    ...(close ? { closeTime: close.toISOString() } : {}),
    durationMs: close ? close.getTime() - start.getTime() : null,
    prompt: typeof run?.prompt === 'string' ? run.prompt : null,
    agent: run?.agent ?? null,
    // A run that continued as new keeps its id: only a fork's origin names another run.
    origin: run?.origin ?? (stored?.origin?.kind === 'fork' ? { workflowId: stored.origin.workflowId, step: stored.origin.step } : null),
    parentWorkflowId: e.parentExecution?.workflowId || null,
    scheduleId: keyword(e, SCHEDULED_BY_SEARCH_ATTRIBUTE) ?? null,
    costUsd: stored?.usage?.costUsd ?? null,
    totalTokens: stored?.usage?.totalTokens ?? null,
  };
}

/** The listing's memo, decoded as the gateway's client decodes payloads; one this gateway cannot decode (another key) is left out, not the run. */
async function decodedMemo(client: Client, e: Execution): Promise<Record<string, unknown>> {
  try {
    return (await decodeMap(client.options.loadedDataConverter, e.memo?.fields ?? undefined)) ?? {};
  } catch {
    return {};
  }
}
