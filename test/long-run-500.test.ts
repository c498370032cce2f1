/**
 * A 500-model-call agent with 5 KB tool outputs on the real server: it completes, continues as new on the way,
 * and the history each step adds stays flat (claim check), instead of growing with the conversation.
 */
import { temporal } from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const STEPS = 500;
const FILES = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt']; // a cycle of 5: longer than the loop guard looks for
const FIVE_KB = (name: string) => `${name}: ${'lorem ipsum dolor sit amet '.repeat(200)}`.slice(0, 5_000);

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness(Object.fromEntries(FILES.map((f) => [f, FIVE_KB(f)])));
}, 120_000);
afterAll(async () => h?.close());

/** Every run of a workflow id, oldest first, following continue-as-new back from the latest. */
async function chain(workflowId: string): Promise<temporal.api.history.v1.IHistory[]> {
  const histories = [];
  let runId: string | undefined = (await h.env.client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await h.env.client.workflow.getHandle(workflowId, runId).fetchHistory();
    histories.unshift(history);
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return histories;
}

const EventType = temporal.api.enums.v1.EventType;
const RUN_END_EVENTS = new Set([
  EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
  EventType.EVENT_TYPE_TIMER_CANCELED,
]);

/** History bytes added per model call: from one `callModel` scheduled event to the next, keyed by call number. */
function bytesPerModelCall(histories: temporal.api.history.v1.IHistory[]): Map<number, number> {
  const perCall = new Map<number, number>();
  for (const history of histories) {
    let current: number | undefined;
    for (const event of history.events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'callModel') {
        const summary = Buffer.from(event.userMetadata?.summary?.data ?? new Uint8Array()).toString();
        current = Number(/model call #(\d+)/.exec(summary)?.[1]);
      }
      if (current !== undefined) {
        const bytes = temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
        perCall.set(current, (perCall.get(current) ?? 0) + bytes);
      }
    }
  }
  return perCall;
}

test(`an agent of ${STEPS} model calls with 5 KB tool outputs completes with flat history per step`, async () => {
  h.model.register('marathon', ({ request }) => {
    const done = request.messages.filter((m: any) => m.role === 'tool').length;
    if (done >= STEPS - 1) return { text: `read ${done} files` };
    return { toolCalls: [{ name: 'readFile', arguments: { path: FILES[done % FILES.length] } }] };
  });
  const started = Date.now();
  const handle: WorkflowHandle = await h.start({
    prompt: 'Read the files again and again',
    model: 'marathon',
    limits: { maxLoops: STEPS + 10, maxToolCalls: STEPS + 10, timeoutMs: 30 * 60_000, historyEvents: 2_000 },
  });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: `read ${STEPS - 1} files`, toolCalls: STEPS - 1, loops: STEPS });

  const histories = await chain(handle.workflowId);
  const perCall = bytesPerModelCall(histories);
  const [at10, at499, at500] = [perCall.get(10)!, perCall.get(STEPS - 1)!, perCall.get(STEPS)!];
  const totalBytes = [...perCall.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${STEPS} model calls in ${((Date.now() - started) / 1000).toFixed(1)} s, ${histories.length} runs (continued as new ${histories.length - 1} times); ` +
      `history bytes per step: step 10 = ${at10}, step ${STEPS - 1} (last tool step) = ${at499}, step ${STEPS} (the answer) = ${at500}; total ${totalBytes} bytes; ` +
      `conversation at the end ~${STEPS * 5} KB`,
  );
  expect(histories.length).toBeGreaterThanOrEqual(2);
  // The run's end is written once a run, in the answer's step: the stored state (memo), the result, the last
  // AgentState and the cancelled timer.
  const last = histories.at(-1)!.events ?? [];
  const answered = last.map((e) => e.eventType).lastIndexOf(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
  const ending = last
    .slice(answered + 1)
    .filter((e) => RUN_END_EVENTS.has(e.eventType!))
    .reduce((sum, e) => sum + temporal.api.history.v1.HistoryEvent.encode(e).finish().length, 0);
  console.log(`the run's end: ${ending} bytes of the answer's step`);
  // Flat: the last step adds about what an early one does, though the conversation is ~50 times longer.
  expect(at499).toBeLessThan(at10 * 1.5);
  expect(at500 - ending).toBeLessThan(at10 * 1.5);
  expect(Math.max(...[...perCall.entries()].filter(([n]) => n >= 10).map(([, b]) => b))).toBeLessThan(at10 * 3);
  // The raw history holds no conversation: the largest event is far below one step's worth of messages.
  const largest = Math.max(...histories.flatMap((hist) => (hist.events ?? []).map((e) => temporal.api.history.v1.HistoryEvent.encode(e).finish().length)));
  expect(largest).toBeLessThan(64 * 1024);
}, 600_000);
