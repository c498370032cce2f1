/**
 * No run waits for a person forever by default: an approval (a tool call's, a spent budget's) and a pause each get a
 * deadline of 7 days unless the run opts out with null, the state view shows the deadline of the wait in progress,
 * and a run may set a total wall-clock backstop, waits included. Through the client on the real dev server.
 */
import { AgentClient } from '../src/client';
import { DEFAULT_APPROVAL_TIMEOUT_MS, DEFAULT_MAX_PAUSED_MS } from '../src/common/input';
import type { RunStateView } from '../src/common/messages';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
let agents: AgentClient;
beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
  // Every run's first call asks for the write (the script serves many runs: it goes by the conversation, not the call count).
  h.model.register('guarded-write', ({ request }) =>
    !request.messages.some((m: { role: string }) => m.role === 'tool') ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'deadline.txt', content: 'x' } }] } : { text: 'written' },
  );
}, 120_000);
afterAll(async () => h?.close());

const WEEK = 7 * 24 * 3600_000;
const waitFor = (workflowId: string, predicate: (s: RunStateView) => boolean) => h.waitForState(h.env.client.workflow.getHandle(workflowId), predicate);
/** The deadline lies `ms` after the wait began (its state's `stateSince`). */
const after = (s: RunStateView, deadline: string | null, ms: number) => expect(deadline && Date.parse(deadline) - Date.parse(s.stateSince)).toBe(ms);

test('an approval wait has a deadline of 7 days by default, shown as the wait deadline; null opts out', async () => {
  expect([DEFAULT_APPROVAL_TIMEOUT_MS, DEFAULT_MAX_PAUSED_MS]).toEqual([WEEK, WEEK]);
  const run = await agents.start({ prompt: 'Write deadline.txt', model: 'guarded-write', approval: { tools: ['writeFile'] } });
  const s = await waitFor(run.workflowId, (v) => v.state === 'AWAITING_APPROVAL');
  expect(s.limits.approvalTimeoutMs).toBe(WEEK);
  after(s, s.approvalDeadline, WEEK);
  expect(s.waitDeadline).toBe(s.approvalDeadline);
  await run.abort('done');

  const open = await agents.start({ prompt: 'Write deadline.txt', model: 'guarded-write', approval: { tools: ['writeFile'] }, limits: { approvalTimeoutMs: null } });
  const waiting = await waitFor(open.workflowId, (v) => v.state === 'AWAITING_APPROVAL');
  expect([waiting.limits.approvalTimeoutMs, waiting.approvalDeadline, waiting.waitDeadline]).toEqual([null, null, null]);
  await open.abort('done');
});

test("approval.onTimeout 'reject' and reminderAt work with the default deadline; with null they are refused", async () => {
  const run = await agents.start({ prompt: 'Write deadline.txt', model: 'guarded-write', approval: { tools: ['writeFile'], onTimeout: 'reject', reminderAt: 0.5 } });
  const s = await waitFor(run.workflowId, (v) => v.state === 'AWAITING_APPROVAL');
  after(s, s.approvalDeadline, WEEK);
  await run.abort('done');
  await expect(agents.start({ prompt: 'x', approval: { tools: ['writeFile'], onTimeout: 'reject' }, limits: { approvalTimeoutMs: null } })).rejects.toThrow(
    "approval.onTimeout: 'reject' needs limits.approvalTimeoutMs, not null",
  );
});

test('a spent budget waiting for approval has the default deadline too', async () => {
  h.model.register('spending', ({ callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ id: 'l1', name: 'listFiles', arguments: {} }], usage: { prompt_tokens: 900, completion_tokens: 100 } } : { text: 'done' },
  );
  const run = await agents.start({ prompt: 'List', model: 'spending', budget: { maxTokens: 1_000, reserveOutputTokens: 1, onExceed: 'approve' } });
  const s = await waitFor(run.workflowId, (v) => v.state === 'AWAITING_APPROVAL');
  expect(s.pendingApproval[0].kind).toBe('budget');
  after(s, s.waitDeadline, WEEK);
  await run.abort('done');
});

test('a pause has a deadline of 7 days by default, shown as the wait deadline', async () => {
  h.model.register('slow-step', ({ callIndex }) =>
    callIndex === 0 ? { text: 'looking around', chunkSize: 1, chunkDelayMs: 100, toolCalls: [{ name: 'listFiles', arguments: {} }] } : { text: 'done' },
  );
  const run = await agents.start({ prompt: 'Look around', model: 'slow-step' });
  await waitFor(run.workflowId, (v) => v.state === 'STREAMING');
  await run.pause(); // taken on the way into the tool step
  const s = await waitFor(run.workflowId, (v) => v.state === 'PAUSED');
  after(s, s.pausedDeadline, WEEK);
  expect(s.waitDeadline).toBe(s.pausedDeadline);
  await run.abort('done');
});

test('limits.totalTimeoutMs ends a run that waits for a person, waits included, and the view shows it', async () => {
  const run = await agents.start({ prompt: 'Write deadline.txt', model: 'guarded-write', approval: { tools: ['writeFile'] }, limits: { totalTimeoutMs: 3_000 } });
  const s = await waitFor(run.workflowId, (v) => v.state === 'AWAITING_APPROVAL');
  expect(s.totalDeadline).not.toBeNull();
  // The run's total time runs out before its approval's 7 days: the wait ends then.
  expect(s.waitDeadline).toBe(s.totalDeadline);
  await expect(run.result()).rejects.toThrow('failed: timed out after 3000 ms in all, waits included (limits.totalTimeoutMs)');
  const ended = await run.state();
  expect([ended.state, ended.reason, ended.totalDeadline]).toEqual(['FAILED', 'timed out after 3000 ms in all, waits included (limits.totalTimeoutMs)', null]);
}, 30_000);
