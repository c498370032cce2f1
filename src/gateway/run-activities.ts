/**
 * A run's activities as its history records them (`GET /v1/runs/:id/activities`): each model call's latency, tokens
 * and model, each tool's and compaction's time. The state view keeps totals only; the history has every call with
 * the server's timestamps, so the page reads it here rather than the workflow growing a per-call log.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { decodeArray, decodeFailureToError } from '../codec/payloads';
import { tsToDate } from '../common/proto-time';
import type { Usage } from '../common/chat';

export interface ActivityRecord {
  /** `callModel`, `executeTool`, `compactContext`, `critiqueAnswer`, ... */
  activity: string;
  /** The summary the workflow gave it (`model call #2 (respond)`, `tool listFiles {...}`). */
  summary: string | null;
  scheduledAt: string;
  startedAt: string | null;
  endedAt: string | null;
  /** From the last attempt's start to its end: the call itself, without time in the task queue. */
  latencyMs: number | null;
  /** From scheduled to ended: queueing, retries and backoff included. */
  totalMs: number | null;
  attempt: number;
  outcome: 'running' | 'completed' | 'failed' | 'timed out' | 'cancelled';
  error: string | null;
  /** callModel (and compactContext, its tokens only): the call's number, purpose, the model that answered, its tokens and why it stopped. */
  model?: { callNumber: number | null; purpose: string | null; model: string | null; usage: Usage | null; finishReason: string | null; toolCalls: number };
}

const E = temporal.api.enums.v1.EventType;

/** The activities of the run's current execution (a run continued as new starts a fresh history), oldest first. */
export async function runActivities(client: Client, workflowId: string): Promise<ActivityRecord[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const converter = client.options.loadedDataConverter;
  const bySchedule = new Map<string, { record: ActivityRecord; input?: temporal.api.common.v1.IPayloads | null }>();
  const ended = (id: unknown, at: Date | undefined, outcome: ActivityRecord['outcome']) => {
    const entry = bySchedule.get(String(id));
    if (!entry) return undefined;
    const r = entry.record;
    r.outcome = outcome;
    r.endedAt = at?.toISOString() ?? null;
    if (at && r.startedAt) r.latencyMs = at.getTime() - Date.parse(r.startedAt);
    if (at) r.totalMs = at.getTime() - Date.parse(r.scheduledAt);
    return entry;
  };
  for (const event of history.events ?? []) {
    const at = tsToDate(event.eventTime);
    if (event.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      const a = event.activityTaskScheduledEventAttributes!;
      const summary = event.userMetadata?.summary ? await decodeArray(converter, [event.userMetadata.summary]).catch(() => [null]) : [null];
      bySchedule.set(String(event.eventId), {
        input: a.input,
        record: {
          activity: a.activityType?.name ?? '',
          summary: typeof summary[0] === 'string' ? summary[0] : null,
          scheduledAt: (at ?? new Date(0)).toISOString(),
          startedAt: null,
          endedAt: null,
          latencyMs: null,
          totalMs: null,
          attempt: 1,
          outcome: 'running',
          error: null,
        },
      });
    } else if (event.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const a = event.activityTaskStartedEventAttributes!;
      const entry = bySchedule.get(String(a.scheduledEventId));
      if (entry) {
        entry.record.startedAt = at?.toISOString() ?? null;
        entry.record.attempt = a.attempt ?? 1;
      }
    } else if (event.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const a = event.activityTaskCompletedEventAttributes!;
      const entry = ended(a.scheduledEventId, at, 'completed');
      if (entry?.record.activity === 'callModel') entry.record.model = await modelCall(client, entry.input, a.result);
      if (entry?.record.activity === 'compactContext') entry.record.model = await compaction(client, a.result);
    } else if (event.eventType === E.EVENT_TYPE_ACTIVITY_TASK_FAILED) {
      const a = event.activityTaskFailedEventAttributes!;
      const entry = ended(a.scheduledEventId, at, 'failed');
      if (entry) entry.record.error = (await decodeFailureToError(converter, a.failure).catch(() => undefined))?.message ?? null;
    } else if (event.eventType === E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) {
      ended(event.activityTaskTimedOutEventAttributes?.scheduledEventId, at, 'timed out');
    } else if (event.eventType === E.EVENT_TYPE_ACTIVITY_TASK_CANCELED) {
      ended(event.activityTaskCanceledEventAttributes?.scheduledEventId, at, 'cancelled');
    }
  }
  // A started event is written only when the attempt ends: a running call's start is not in history yet.
  return [...bySchedule.values()].map((e) => e.record);
}

/** A model call's request and response, read for what the page shows; a payload this gateway cannot decode leaves nulls. */
async function modelCall(client: Client, input: temporal.api.common.v1.IPayloads | null | undefined, result: temporal.api.common.v1.IPayloads | null | undefined): Promise<ActivityRecord['model']> {
  const converter = client.options.loadedDataConverter;
  const [request] = (await decodeArray(converter, input?.payloads).catch(() => [])) as Array<{ callNumber?: number; purpose?: string } | undefined>;
  const [response] = (await decodeArray(converter, result?.payloads).catch(() => [])) as Array<
    { model?: string; usage?: Usage; finishReason?: string | null; toolCalls?: unknown[]; quotaWait?: unknown } | undefined
  >;
  return {
    callNumber: request?.callNumber ?? null,
    purpose: request?.purpose ?? null,
    model: response?.model ?? null,
    usage: response?.usage ?? null,
    finishReason: response?.quotaWait ? 'quota wait' : (response?.finishReason ?? null),
    toolCalls: response?.toolCalls?.length ?? 0,
  };
}

/** Compaction's own model calls: their tokens (the run's usage counts them too). */
async function compaction(client: Client, result: temporal.api.common.v1.IPayloads | null | undefined): Promise<ActivityRecord['model']> {
  const [response] = (await decodeArray(client.options.loadedDataConverter, result?.payloads).catch(() => [])) as Array<{ usage?: Usage } | undefined>;
  return { callNumber: null, purpose: 'compaction', model: null, usage: response?.usage ?? null, finishReason: null, toolCalls: 0 };
}
