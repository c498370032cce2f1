/**
 * Lean steps on the real dev server: calls of tools marked `local` run inside the model call that asked for them (or
 * as local activities when they waited for approval), others stay task-queue activities, and the AgentState search
 * attribute is written before the run waits instead of on every transition.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { approveUpdate, stateQuery } from '../src/common/messages';
import { sandboxWebpackConfig, workflowCode } from '../src/worker/workflow-bundle';
import { startAgentHarness, waitFor, workflowBundle, type AgentHarness } from './support/agent-harness';
import { streamSinks } from '../src/stream/sinks';

const EventType = temporal.api.enums.v1.EventType;

let h: AgentHarness;
beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);
afterAll(async () => h?.close());

const events = async (handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }) => (await handle.fetchHistory()).events ?? [];
const scheduledActivities = (all: temporal.api.history.v1.IHistoryEvent[]) =>
  all.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
const localActivityMarkers = (all: temporal.api.history.v1.IHistoryEvent[]) =>
  all.filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
const agentStateUpserts = (all: temporal.api.history.v1.IHistoryEvent[]) =>
  all
    .filter((e) => e.eventType === EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.AgentState?.data)
    .filter((data) => data != null)
    .map((data) => JSON.parse(Buffer.from(data).toString()));

test('a pure tool runs inside the model call that asked for it; a tool with side effects stays a task-queue activity', async () => {
  h.model.register('read-then-write', ({ callIndex, request }) => {
    if (callIndex === 0) return { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] };
    if (callIndex === 1) return { toolCalls: [{ name: 'writeFile', arguments: { path: 'copy.txt', content: 'copied' } }] };
    const results = request.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
    return { text: results.join(' | ') };
  });
  const handle = await h.start({ prompt: 'Read hello.txt, then write copy.txt', model: 'read-then-write' });
  const result = await handle.result();

  expect(result.answer).toBe('Hello from the workspace\nsecond line\n | wrote 6 bytes to copy.txt');
  expect(readFileSync(path.join(h.workspace, 'copy.txt'), 'utf8')).toBe('copied');
  const all = await events(handle);
  // Three model calls and writeFile went through the task queue; readFile ran inside the first model call: no local
  // activity, and from that call's completion to the next call one workflow task and nothing else.
  expect(scheduledActivities(all)).toEqual(['callModel', 'callModel', 'executeTool', 'callModel']);
  expect(localActivityMarkers(all)).toHaveLength(0);
  const firstDone = all.findIndex((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
  const secondCall = all.findIndex((e, i) => i > firstDone && e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  expect(all.slice(firstDone + 1, secondCall).map((e) => EventType[e.eventType!])).toEqual([
    'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
    'EVENT_TYPE_WORKFLOW_TASK_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
  ]);
  const tool = (await handle.query(stateQuery)).recentToolCalls[0];
  expect(tool).toMatchObject({ name: 'readFile', ok: true, output: 'Hello from the workspace\nsecond line\n' });
  // The run waited on the model and on writeFile, so those states reached the search attribute; readFile's did not.
  expect(agentStateUpserts(all)).toEqual(['STREAMING', 'TOOL_EXECUTING', 'STREAMING', 'COMPLETED']);
  await expect(Worker.runReplayHistory({ workflowBundle: h.bundle, sinks: streamSinks(undefined) }, { events: all }, handle.workflowId)).resolves.toBeUndefined();
});

test('a pure tool that waits for approval runs after it, as a local activity with a readable summary, never before', async () => {
  h.model.register('guarded-read', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'r1', name: 'readFile', arguments: { path: 'hello.txt' } }] } : { text: 'read' },
  );
  const handle = await h.start({ prompt: 'Read hello.txt', model: 'guarded-read', approval: { tools: ['readFile'] } });
  await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  expect((await handle.query(stateQuery)).recentToolCalls).toEqual([]);
  await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'r1', approved: true }] });
  expect((await handle.result()).answer).toBe('read');
  const markers = localActivityMarkers(await events(handle));
  expect(markers).toHaveLength(1);
  // The local call carries the same readable summary as a task-queue tool, for the UI's timeline.
  const summary = markers[0].userMetadata?.summary;
  expect(summary && defaultPayloadConverter.fromPayload(summary as never)).toBe('tool readFile {"path":"hello.txt"}');
});

test('the search attribute is written before the run waits, not on every transition, and ends with the final state', async () => {
  h.model.register('two-steps', ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }] } : { text: 'done' }));
  const handle = await h.start({ prompt: 'List, then answer', model: 'two-steps' });
  await handle.result();

  const transitions = (await handle.query(stateQuery)).transitions.map((t) => t.to);
  expect(transitions).toEqual(['STREAMING', 'PROCESSING', 'TOOL_EXECUTING', 'CRITIQUE', 'STREAMING', 'PROCESSING', 'CRITIQUE', 'COMPLETED']);
  const upserts = agentStateUpserts(await events(handle));
  // Once when the run first waits on the model, and at the end. The local listFiles ran within the first call's
  // completion task, so the run never waited in TOOL_EXECUTING, and the second model call left the value as it was.
  expect(upserts).toEqual(['STREAMING', 'COMPLETED']);
  await waitFor(async () => ((await handle.describe()).searchAttributes.AgentState?.[0] === 'COMPLETED' ? true : undefined), 10_000, 'AgentState COMPLETED');
});

test('a run waiting for approval shows AWAITING_APPROVAL in the search attribute and the list filter', async () => {
  h.model.register('guarded-write', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'g1', name: 'writeFile', arguments: { path: 'guarded.txt', content: 'x' } }] } : { text: 'written' },
  );
  const handle = await h.start({ prompt: 'Write guarded.txt', model: 'guarded-write', approval: { tools: ['writeFile'] } });
  await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
  await waitFor(
    async () => ((await handle.describe()).searchAttributes.AgentState?.[0] === 'AWAITING_APPROVAL' ? true : undefined),
    10_000,
    'AgentState AWAITING_APPROVAL',
  );
  const listed = await waitFor(async () => {
    const ids: string[] = [];
    for await (const run of h.env.client.workflow.list({ query: `AgentState = "AWAITING_APPROVAL" AND WorkflowId = "${handle.workflowId}"` })) ids.push(run.workflowId);
    return ids.length ? ids : undefined;
  }, 10_000, 'the run in the AWAITING_APPROVAL list');
  expect(listed).toEqual([handle.workflowId]);
  expect(existsSync(path.join(h.workspace, 'guarded.txt'))).toBe(false);

  await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'g1', approved: true }] });
  expect((await handle.result()).answer).toBe('written');
});

test('a worker told to use a prebuilt bundle directory that lacks one fails at once, naming the command that builds it', () => {
  const empty = mkdtempSync(path.join(os.tmpdir(), 'no-bundle-'));
  expect(() => workflowCode(empty, false)).toThrow(`AGENT_WORKFLOW_BUNDLE_DIR is ${empty}, which has no workflows.js: build it with \`npm run build:workflows -- ${empty}\``);
  expect(() => workflowCode(empty, true)).toThrow(/has no workflows-tracing\.js/);
  expect(() => workflowCode(empty, true, true)).toThrow(/has no workflows-tracing-encrypted\.js/);
  expect(workflowCode(undefined, false)).toEqual({
    workflowsPath: require.resolve('../src/workflows'),
    bundlerOptions: { preloadModules: ['zod', require.resolve('../src/common/zod-preload')], webpackConfigHook: sandboxWebpackConfig },
  });
});

test('the workflow bundle keeps object spread native: the machine spreads its snapshot several times a transition', async () => {
  const { code } = await workflowBundle();
  // The SDK's bundler alone compiles for ES2017, where every `{ ...s }` becomes a call of this helper.
  expect(code).not.toMatch(/function _object_spread\(/);
  expect(code).toMatch(/rejectedEvents: \[\s*\.\.\.s\.logs\.rejectedEvents/);
});

test('a new run records no patch marker and no TemporalChangeVersion upsert: 1.0 is its only definition', async () => {
  h.model.register('one-answer', () => ({ text: 'done' }));
  const handle = await h.start({ prompt: 'Answer', model: 'one-answer' });
  await handle.result();
  const all = await events(handle);
  const patchIds = all
    .filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => (defaultPayloadConverter.fromPayload(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0]) as { id: string }).id);
  expect(patchIds).toEqual([]);
  const changeVersions = all.filter((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.TemporalChangeVersion);
  expect(changeVersions).toHaveLength(0);
});
