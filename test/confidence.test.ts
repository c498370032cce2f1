/**
 * One confidence scale, seed 000's 0 to 100: the critic is asked for it, `critiqueMinConfidence` is on it, and the
 * view shows it; a critic's 1 is 1%, not 100%. Runs carried on from snapshots of the old 0-to-1 scale migrate.
 * Through the client on the real dev server.
 */
import { AgentClient } from '../src/client';
import type { ScriptContext, ScriptStep } from '../src/scripted-model/types';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
let agents: AgentClient;
beforeAll(async () => {
  h = await startAgentHarness();
  agents = new AgentClient(h.env.client, h.taskQueue);
}, 120_000);
afterAll(async () => h?.close());

const isCritic = (request: ScriptContext['request']) => String(request.messages?.[0]?.content ?? '').startsWith('You review');

test("a critic's confidence of 1 is 1 on 0 to 100: under critiqueMinConfidence 70 it is a retry; 90 completes", async () => {
  let verdicts = 0;
  h.model.register('unsure', ({ request }: ScriptContext): ScriptStep => {
    if (!isCritic(request)) return { text: 'Paris.' };
    return { text: JSON.stringify({ action: 'complete', reason: 'looks right', confidence: verdicts++ === 0 ? 1 : 90 }) };
  });
  const run = await agents.start({ prompt: 'Capital of France?', model: 'unsure', critique: 'model', critiqueMinConfidence: 70 });
  expect((await run.result()).answer).toBe('Paris.');
  const state = await run.state();
  expect(state.lastCritique).toEqual({ action: 'complete', reason: 'looks right', confidence: 90 });
  // The first verdict was not confident enough: the model answered twice.
  expect(state.transitions.filter((t) => t.to === 'STREAMING')).toHaveLength(2);
  const asked = h.model.requests('unsure').find((r) => isCritic(r.body))!.body;
  expect(asked.messages[0].content).toContain('"confidence": number from 0 to 100');
});

test('critiqueMinConfidence above 100 is refused, naming the field', async () => {
  await expect(agents.start({ prompt: 'x', critiqueMinConfidence: 101 })).rejects.toThrow(/critiqueMinConfidence/);
});
