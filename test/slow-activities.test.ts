/**
 * Slow activities on the real dev server, under the product's own activity options: a streamed answer, a summary, a
 * critic verdict and a tool that take far longer than their heartbeat timeouts each finish in one attempt, because
 * they heartbeat while they work. Asserted from the workflow history: the activity's started event says attempt 1,
 * and nothing timed out.
 */
import { setTimeout as waitUnlessAborted } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { defineTool } from '../src/activities';
import { stateQuery } from '../src/common/messages';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

const EventType = temporal.api.enums.v1.EventType;
/** Twice the model call's 5 s heartbeat timeout. */
const SLOW_MODEL_MS = 10_000;
/** A reasoning model's answer: 10 s to its first token, then a chunk a second (16 of 4 characters). */
const SLOW_STREAM = { firstChunkDelayMs: SLOW_MODEL_MS, chunkSize: 4, chunkDelayMs: 1_000 } as const;
/** Half again the tool's 30 s heartbeat timeout. */
const SLOW_TOOL_MS = 45_000;

const slowTool = defineTool({
  name: 'slowReport',
  description: 'Builds a report; takes 45 seconds.',
  parameters: z.object({}),
  sideEffects: false,
  timeoutMs: 120_000,
  execute: (_args, { signal }) => waitUnlessAborted(SLOW_TOOL_MS, 'report ready', { signal }),
});

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness(undefined, { tools: [slowTool] });
}, 120_000);
afterAll(async () => h?.close());

const isSummarised = (request: any) => request.messages.some((m: any) => String(m.content).startsWith('Summary of the earlier conversation:'));

/** Every attempt of `activityType` the history recorded as started (the last one of each activity), and any timeout. */
async function attemptsOf(handle: WorkflowHandle, activityType: string): Promise<{ attempts: number[]; timedOut: number }> {
  const events = (await handle.fetchHistory()).events ?? [];
  const types = new Map<string, string>();
  const attempts: number[] = [];
  let timedOut = 0;
  for (const event of events) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) types.set(String(event.eventId), scheduled.activityType?.name ?? '');
    const started = event.activityTaskStartedEventAttributes;
    if (started && types.get(String(started.scheduledEventId)) === activityType) attempts.push(started.attempt ?? 0);
    if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) timedOut++;
  }
  return { attempts, timedOut };
}

test('a compaction whose summary takes 10 s finishes in one attempt', async () => {
  h.model.register('slow-summary', ({ request, callIndex }) => {
    if (!request.stream) return { text: 'summary of the early turns', firstChunkDelayMs: SLOW_MODEL_MS }; // the compaction call
    if (callIndex === 0) return { toolCalls: [{ name: 'listFiles', arguments: {} }] };
    if (!isSummarised(request)) return { error: { status: 400, message: 'This model maximum context length is 10 tokens', code: 'context_length_exceeded' } };
    return { text: 'answer after compaction' };
  });
  const handle = await h.start({ prompt: 'Go', model: 'slow-summary' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'answer after compaction' });
  expect((await handle.query(stateQuery)).transitions.map((t) => t.to)).toContain('COMPACTING');
  expect(await attemptsOf(handle, 'compactContext')).toEqual({ attempts: [1], timedOut: 0 });
  const summaries = h.model.requests('slow-summary').filter((r) => !r.stream);
  expect(summaries).toEqual([expect.objectContaining({ completed: true, closedByClient: false })]);
}, 60_000);

test('a model answer streamed over 25 s finishes in one attempt: the 800 ms beat keeps the 5 s heartbeat timeout', async () => {
  const answer = 'word'.repeat(16);
  h.model.register('slow-stream', [{ text: answer, ...SLOW_STREAM }]);
  const handle = await h.start({ prompt: 'What is in the workspace?', model: 'slow-stream' });

  // While it waits for its first token and while it streams, the server records the call's heartbeats.
  const beatTimes = new Set<number>();
  const watching = (async () => {
    for (;;) {
      const { raw, status } = await handle.describe();
      if (status.name !== 'RUNNING') return;
      const call = raw.pendingActivities?.find((a) => a.activityType?.name === 'callModel');
      if (call?.lastHeartbeatTime) beatTimes.add(Number(call.lastHeartbeatTime.seconds));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  })();
  const result = await handle.result();
  await watching;

  expect(result).toMatchObject({ status: 'COMPLETED', answer });
  expect(await attemptsOf(handle, 'callModel')).toEqual({ attempts: [1], timedOut: 0 });
  // Beats seen at many distinct seconds: the ticker ran through the wait for the first token and through the stream.
  expect(beatTimes.size).toBeGreaterThanOrEqual(8);
  expect(h.model.requests('slow-stream')).toEqual([expect.objectContaining({ completed: true, closedByClient: false })]);
}, 90_000);

test('a model critic whose verdict takes 10 s finishes in one attempt, and its verdict decides', async () => {
  const verdict = { action: 'complete', reason: 'the answer names the file', confidence: 85 };
  h.model.register('slow-critic', ({ request }) =>
    request.stream ? { text: 'The workspace holds hello.txt.' } : { text: JSON.stringify(verdict), firstChunkDelayMs: SLOW_MODEL_MS },
  );
  const handle = await h.start({ prompt: 'What is in the workspace?', model: 'slow-critic', critique: 'model' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'The workspace holds hello.txt.' });
  expect((await handle.query(stateQuery)).lastCritique).toMatchObject(verdict);
  expect(await attemptsOf(handle, 'critiqueAnswer')).toEqual({ attempts: [1], timedOut: 0 });
  const verdicts = h.model.requests('slow-critic').filter((r) => !r.stream);
  expect(verdicts).toEqual([expect.objectContaining({ completed: true })]);
  expect(verdicts[0].body.response_format.type).toBe('json_schema');
}, 60_000);

test('a tool that takes 45 s heartbeats, finishes in one attempt, and its result reaches the model', async () => {
  h.model.register('slow-tool', ({ callIndex, request }) =>
    callIndex === 0
      ? { toolCalls: [{ name: 'slowReport', arguments: {} }] }
      : { text: `Done: ${request.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content).join()}` },
  );
  const handle = await h.start({ prompt: 'Build the report', model: 'slow-tool' });

  // While it works, the server records its heartbeats.
  const pending = await waitFor(
    async () => {
      const { raw } = await handle.describe();
      return raw.pendingActivities?.find((a) => a.activityType?.name === 'executeTool' && a.lastHeartbeatTime);
    },
    20_000,
    'a heartbeat from the slow tool',
  );
  expect(pending.attempt).toBe(1);
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'Done: report ready', toolCalls: 1 });
  expect(await attemptsOf(handle, 'executeTool')).toEqual({ attempts: [1], timedOut: 0 });
  // The model activity told the run how long the tool may take (its start-to-close).
  const { messages } = await handle.query(stateQuery, { includeMessages: true });
  expect(messages?.find((m) => m.role === 'assistant' && m.toolCalls?.length)).toMatchObject({
    toolCalls: [{ name: 'slowReport', timeoutMs: 120_000 }],
  });
}, 90_000);
