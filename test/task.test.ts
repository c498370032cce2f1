/**
 * The task of a turn is its prompt, with the conversation before it as context (RunSnapshot.task): the model critic,
 * the plan and compaction judge by it, and the state view shows it, through the client on the real dev server.
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

type Message = { role: string; content: string };
const system = (request: ScriptContext['request']) => String(request.messages?.[0]?.content ?? '');
const isCritic = (request: ScriptContext['request']) => system(request).startsWith('You review');
const isSummary = (request: ScriptContext['request']) => system(request).startsWith('You summarise');
const critics = (model: string) => h.model.requests(model).filter((r) => isCritic(r.body)).map((r) => (r.body.messages as Message[])[1].content);

/** Answers each turn with `answers` in order; the critic completes with confidence 90. */
function answering(...answers: string[]) {
  let turn = 0;
  return ({ request }: ScriptContext): ScriptStep =>
    isCritic(request) ? { text: JSON.stringify({ action: 'complete', reason: 'done', confidence: 90 }) } : { text: answers[Math.min(turn++, answers.length - 1)] };
}

const prior = [
  { role: 'user' as const, content: 'What is the capital of Italy?' },
  { role: 'assistant' as const, content: 'Rome.' },
];

test("the critic judges the continued conversation's prompt, with the conversation before it as context", async () => {
  h.model.register('translate', answering('Rome se dit Rome en français.'));
  const run = await agents.start({ prompt: 'Translate the answer into French', messages: prior, model: 'translate', critique: 'model' });
  expect((await run.result()).status).toBe('COMPLETED');
  const [shown] = critics('translate');
  expect(shown).toContain('Task:\nTranslate the answer into French\n');
  expect(shown).toContain('Conversation before the task:\nuser: What is the capital of Italy?\nassistant: Rome.');
  expect(shown).not.toContain('Task:\nWhat is the capital of Italy?');
  expect((await run.state()).task).toBe('Translate the answer into French');
});

test("a follow-up turn of a kept-open conversation is the critic's task, and the view's", async () => {
  h.model.register('two-turns', answering('Rome.', 'Madrid.'));
  const run = await agents.start({ prompt: 'What is the capital of Italy?', model: 'two-turns', critique: 'model', keepOpenMs: 30_000 });
  await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.turns === 1);
  await run.sendMessage('And of Spain?');
  const state = await h.waitForState(h.env.client.workflow.getHandle(run.workflowId), (s) => s.turns === 2);
  expect(state.task).toBe('And of Spain?');
  const shown = critics('two-turns');
  expect(shown[0]).toContain('Task:\nWhat is the capital of Italy?\n');
  expect(shown[0]).not.toContain('Conversation before the task');
  expect(shown[1]).toContain('Task:\nAnd of Spain?\n');
  expect(shown[1]).toContain('Conversation before the task:\nuser: What is the capital of Italy?\nassistant: Rome.');
});

test("the plan is asked for the turn's task", async () => {
  h.model.register('planned', answering('1. Translate.', 'Roma.'));
  const run = await agents.start({ prompt: 'Translate the answer into Italian', messages: prior, model: 'planned', plan: true });
  await run.result();
  const planAsk = (h.model.requests('planned')[0].body.messages as Message[]).at(-1)!.content;
  expect(planAsk).toContain('for this task:\nTranslate the answer into Italian\n');
});

test("compaction keeps the turn's prompt verbatim and summarises the conversation before it", async () => {
  h.model.register('overflowing', ({ request }: ScriptContext): ScriptStep => {
    if (isSummary(request)) return { text: 'they asked for the capital of Italy: Rome' };
    const messages = request.messages as Message[];
    if (!messages.some((m) => m.role === 'user' && m.content.startsWith('Summary of the earlier conversation:'))) {
      return { error: { status: 400, message: 'This model maximum context length is 10 tokens', code: 'context_length_exceeded' } };
    }
    return { text: messages.some((m) => m.role === 'user' && m.content === 'Translate the answer into German') ? 'the task is there' : 'the task is gone' };
  });
  const run = await agents.start({ prompt: 'Translate the answer into German', messages: prior, model: 'overflowing' });
  expect((await run.result()).answer).toBe('the task is there');
  const summarised = h.model.requests('overflowing').filter((r) => isSummary(r.body)).map((r) => (r.body.messages as Message[])[1].content).join('\n');
  expect(summarised).toContain('What is the capital of Italy?');
  expect(summarised).not.toContain('Translate the answer into German');
});
