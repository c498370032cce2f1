/**
 * What the docs promise about refusals holds (issue 46): a refused update is not recorded in `rejectedEvents`, and the
 * view's own description (the gateway's OpenAPI document) says so; a refused signal is recorded there.
 */
import { AgentClient } from '../src/client';
import { resumeSignal } from '../src/common/messages';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
let agents: AgentClient;
beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
}, 120_000);
afterAll(async () => h?.close());

test("a refused update is not in rejectedEvents, a refused signal is, and the gateway's document says which", async () => {
  h.model.register('held-write', ({ request }) =>
    !request.messages.some((m: { role: string }) => m.role === 'tool') ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'r.txt', content: 'x' } }] } : { text: 'done' },
  );
  const run = await agents.start({ prompt: 'Write r.txt', model: 'held-write', approval: { tools: ['writeFile'] } });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  await expect(run.approve({ toolCallId: 'nope', approved: true })).rejects.toThrow('toolCallId nope is not waiting for approval (waiting: w1)');
  expect((await run.state()).rejectedEvents).toEqual([]);
  // The same refusal brought by a signal (clients before 0.2) is recorded.
  await h.env.client.workflow.getHandle(run.workflowId).signal(resumeSignal);
  const recorded = await waitFor(async () => ((await run.state()).rejectedEvents.length ? (await run.state()).rejectedEvents : undefined), 10_000, 'the refused signal recorded');
  expect(recorded).toEqual([expect.objectContaining({ event: 'RESUME', state: 'AWAITING_APPROVAL', error: 'the run is AWAITING_APPROVAL, not paused' })]);
  await run.abort('done');

  const app = buildGateway({ agents, token: 't' });
  try {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const described = doc.components.schemas.RunState.properties.rejectedEvents.description as string;
    expect(described).toContain('A refused update (approve, sendMessage, abort, pause, resume) is not recorded here');
  } finally {
    await app.close();
  }
});
