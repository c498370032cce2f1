/**
 * Records the histories that test/replay.test.ts replays: `npm run record-histories`. The 1.0 histories are fixtures
 * every later release must replay: never re-record them. A change of workflow logic that must reach running workflows
 * is a new definition (src/workflows/definition.ts), recorded beside them (docs/deployment.md, "Versioning").
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import {
  abortSignal,
  abortUpdate,
  approveUpdate,
  pauseSignal,
  pauseUpdate,
  resumeSignal,
  resumeUpdate,
  sendMessageUpdate,
} from '../src/common/messages';
import { defineAgent, type ToolPolicy } from '../src/activities';
import type { Script } from '../src/scripted-model';
import { startAgentHarness, type AgentHarness } from '../test/support/agent-harness';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { RedisBudget } from '../src/quota';
import { freePort, startRedis } from '../test/support/redis';
import { startDevServer } from './lib/dev-server';
import { ensureTemporalCli } from './lib/temporal-cli';

const OUT = path.resolve(__dirname, '..', 'test', 'histories');

interface Scenario {
  name: string;
  script: Script;
  input: Record<string, unknown>;
  drive?: (h: AgentHarness, handle: WorkflowHandle) => Promise<void>;
  /** More models the run calls (its input names them), registered before it starts. */
  models?: Record<string, Script>;
  /**
   * The run's worker draws on a fleet budget of these limits (a real redis-server), of which another worker's call
   * has just drawn `drawn` tokens.
   */
  budget?: { tokensPerMinute: number; drawn: number };
}

const SCENARIOS: Scenario[] = [
  {
    name: 'tools-and-answer',
    script: ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] } : { text: 'One file: hello.txt', chunkSize: 3, chunkDelayMs: 30 }),
    input: { prompt: 'What is in the workspace?' },
  },
  {
    name: 'plan-and-model-critic',
    script: [],
    input: { prompt: 'What does the workspace say?', plan: true, critique: 'model' },
  },
  {
    // plan: 'steps': a malformed plan asked for again, 3 steps, each ended by the critique, then the answer.
    name: 'plan-steps',
    script: ({ callIndex }) =>
      [
        { text: 'I will list the files, read one and answer.' },
        { text: JSON.stringify({ steps: ['List the files in the workspace.', 'Read hello.txt.', 'Answer with what it says.'] }) },
        { toolCalls: [{ name: 'listFiles', arguments: { path: '.' } }] },
        { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] },
        { text: 'hello.txt says "Hello from the workspace".' },
      ][callIndex] ?? { text: 'done' },
    input: { prompt: 'What does the workspace say?', plan: 'steps' },
  },
  {
    name: 'loop-guard',
    script: () => ({ toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] }),
    input: { prompt: 'Read hello.txt' },
  },
  {
    name: 'approval',
    script: ({ callIndex }) =>
      callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'hi' } }] } : { text: 'written' },
    input: { prompt: 'Write out.txt', approval: { tools: ['writeFile'] } },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
      await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1', approved: true }] });
    },
  },
  {
    // approval-notes: an edit with feedback and a rejection with feedback, told in one user message after the results.
    name: 'approval-feedback',
    script: ({ callIndex }) =>
      callIndex === 0
        ? {
            toolCalls: [
              { id: 'w1', name: 'writeFile', arguments: { path: 'model.txt', content: 'hi' } },
              { id: 'w2', name: 'writeFile', arguments: { path: 'other.txt', content: 'no' } },
            ],
          }
        : { text: 'written' },
    input: { prompt: 'Write two files', approval: { tools: ['writeFile'] } },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
      await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1', approved: true, feedback: 'a better name', arguments: { path: 'person.txt', content: 'hi' } }] });
      await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w2', approved: false, feedback: 'one file is enough' }] });
    },
  },
  {
    // unknown-tools-uncounted: the worker refuses the model call before any request.
    name: 'unknown-tools',
    script: [],
    input: { prompt: 'Use a tool this worker lacks', tools: ['bogusTool'] },
  },
  {
    name: 'pause-resume',
    script: ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }], firstChunkDelayMs: 500 } : { text: 'done' }),
    input: { prompt: 'List, then answer' },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'STREAMING');
      await handle.signal(pauseSignal);
      await h.waitForState(handle, (s) => s.state === 'PAUSED');
      await handle.signal(resumeSignal);
    },
  },
  {
    // real-providers: the clock stops while the approval waits (the timer is cancelled and started again after it)
    // and a cut-off answer is continued.
    name: 'human-time-and-continuation',
    script: ({ callIndex }) =>
      callIndex === 0
        ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'late.txt', content: 'hi' } }] }
        : callIndex === 1
          ? { text: 'Written, and the', finishReason: 'length' }
          : { text: ' file says hi.' },
    input: { prompt: 'Write late.txt', approval: { tools: ['writeFile'] }, limits: { timeoutMs: 2_000, approvalTimeoutMs: 600_000 }, maxOutputTokens: 8 },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
      await new Promise((resolve) => setTimeout(resolve, 2_500)); // past timeoutMs
      await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1', approved: true }] });
    },
  },
  {
    // The machine's awaitMessage command: a kept-open conversation takes a follow-up turn, then its window closes.
    name: 'follow-up-turn',
    script: ({ callIndex }) => ({ text: callIndex === 0 ? 'First answer.' : 'Second answer.' }),
    input: { prompt: 'Answer, then wait for more', keepOpenMs: 1_500 },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'COMPLETED' && s.conversationOpen);
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'And then?' }] });
      await h.waitForState(handle, (s) => s.turns === 2);
    },
  },
  {
    // A start that names an agent: its spec is resolved by a local activity (a marker) and merged before the run starts.
    name: 'named-agent',
    script: ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] } : { text: 'It says hello.' }),
    input: { agent: 'reader', prompt: 'What does hello.txt say?' },
  },
  {
    // wrap-up: empty answers are sent back until the last model call, which is told to conclude.
    name: 'wrap-up',
    script: ({ callIndex }) => ({ text: callIndex < 2 ? '' : 'Done, with what I have.' }),
    input: { prompt: 'Answer within three calls', limits: { maxLoops: 3 } },
  },
  {
    name: 'abort-during-stream',
    script: [{ text: 'x'.repeat(500), chunkSize: 2, chunkDelayMs: 50 }],
    input: { prompt: 'Talk' },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.partialText.length > 0);
      await handle.signal(abortSignal, { reason: 'recorded abort' });
    },
  },
  {
    // The controls as clients send them since 0.2: updates with a deadline, which replay long after it has passed.
    name: 'control-updates',
    script: ({ callIndex }) =>
      callIndex === 0
        ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'hi' } }] }
        : { text: 'y'.repeat(400), chunkSize: 2, chunkDelayMs: 50 },
    input: { prompt: 'Write out.txt, then talk', approval: { tools: ['writeFile'] } },
    drive: async (h, handle) => {
      const deadline = () => new Date(Date.now() + 10_000).toISOString();
      // An update that meets a workflow task the server failed (UnhandledCommand: the task's new timer crossed the
      // update) is refused with FAILED_PRECONDITION before the run saw it: sent again, as a client would.
      const again = <T>(send: () => Promise<T>): Promise<T> =>
        send().catch(async (err: unknown) => {
          if (!String((err as { cause?: unknown })?.cause ?? err).includes('unexpected workflow task failure')) throw err;
          await new Promise((resolve) => setTimeout(resolve, 500));
          return send();
        });
      await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
      await again(() => handle.executeUpdate(pauseUpdate, { args: [{ deadline: deadline() }] }));
      await again(() => handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'w1', approved: true, deadline: deadline() }] }));
      await h.waitForState(handle, (s) => s.state === 'PAUSED');
      await again(() => handle.executeUpdate(resumeUpdate, { args: [{ deadline: deadline() }] }));
      await h.waitForState(handle, (s) => s.partialText.length > 0);
      await again(() => handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Stop soon.', deadline: deadline() }] }));
      await again(() => handle.executeUpdate(abortUpdate, { args: [{ reason: 'recorded abort', deadline: deadline() }] }));
    },
  },
  {
    // model-fallback: a model that is gone (404 model_not_found) moves the run to the next of fallbackModels; the run
    // carries on a prior conversation and returns it.
    name: 'model-fallback',
    script: [{ text: 'Still hello.' }],
    input: {
      prompt: 'Is that all it says?',
      model: 'record-gone',
      fallbackModels: ['record-model-fallback'],
      messages: [
        { role: 'user', content: 'What does hello.txt say?' },
        { role: 'assistant', content: 'It says hello.' },
      ],
      returnMessages: true,
    },
  },
  {
    // model-timeout-fallback: a model call that runs out of time (4 s here: test/support/short-model-timeouts.ts)
    // moves the run to the next of fallbackModels.
    name: 'model-timeout-fallback',
    script: [{ text: 'Answered after the timeout.' }],
    models: { 'times-out-record': () => ({ text: 'too late', firstChunkDelayMs: 60_000 }) },
    input: { prompt: 'Hello', model: 'times-out-record', fallbackModels: ['record-model-timeout-fallback'] },
  },
  {
    // interrupt-2026-12: a message that cancels the model call mid-stream; the text so far stays, marked interrupted.
    name: 'interrupt-stream',
    script: ({ callIndex }) => (callIndex === 0 ? { text: 'z'.repeat(400), chunkSize: 2, chunkDelayMs: 50 } : { text: 'Brief, as asked.' }),
    input: { prompt: 'Talk' },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.partialText.length > 0);
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Be brief.', interrupt: true }] });
    },
  },
  {
    // interrupt-2026-12: a message while a call waits for approval rejects it as interrupted.
    name: 'interrupt-approval',
    script: ({ callIndex }) =>
      callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'hi' } }] } : { text: 'Not written.' },
    input: { prompt: 'Write out.txt', approval: { tools: ['writeFile'] } },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Do not write it.', interrupt: true }] });
    },
  },
  {
    // approval.reminderAt and onTimeout 'reject': a reminder from the run's timer, then the call rejected and the run on.
    name: 'approval-timeout-reject',
    script: ({ callIndex }) =>
      callIndex === 0 ? { toolCalls: [{ id: 'w1', name: 'writeFile', arguments: { path: 'out.txt', content: 'hi' } }] } : { text: 'not written' },
    input: { prompt: 'Write out.txt', approval: { tools: ['writeFile'], onTimeout: 'reject', reminderAt: 0.5 }, limits: { approvalTimeoutMs: 1_500 } },
  },
  {
    // limits.maxPausedMs: a run paused that long is aborted.
    name: 'paused-too-long',
    script: ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ name: 'listFiles', arguments: {} }], firstChunkDelayMs: 500 } : { text: 'done' }),
    input: { prompt: 'List, then answer', limits: { maxPausedMs: 1_000 } },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'STREAMING');
      await handle.signal(pauseSignal);
    },
  },
  {
    // model-critic-tools: with critique 'model', the model critic judges each tool step from its results.
    name: 'model-critic-tools',
    script: [],
    input: { prompt: 'What does the workspace say?', critique: 'model' },
  },
  {
    // The worker's tool policy (RECORD_POLICY): one call denied, one rewritten, one held for approval and approved.
    name: 'tool-policy',
    script: ({ callIndex }) =>
      callIndex === 0
        ? {
            toolCalls: [
              { id: 'd1', name: 'writeFile', arguments: { path: 'policy-denied.txt', content: 'x' } },
              { id: 'r1', name: 'readFile', arguments: { path: '../hello.txt' } },
              { id: 'a1', name: 'listFiles', arguments: { path: 'policy-held' } },
            ],
          }
        : { text: 'done' },
    input: { prompt: 'Write, read and list' },
    drive: async (h, handle) => {
      await h.waitForState(handle, (s) => s.state === 'AWAITING_APPROVAL');
      await handle.executeUpdate(approveUpdate, { args: [{ toolCallId: 'a1', approved: true }] });
    },
  },
  {
    // limits.onLimit 'complete': the run at maxLoops ends COMPLETED with its last text.
    name: 'limit-complete',
    script: [{ text: 'first draft', toolCalls: [{ name: 'listFiles', arguments: {} }] }],
    input: { prompt: 'List', limits: { maxLoops: 1, onLimit: 'complete' } },
  },
  {
    // parallel-agents: two calls of a named agent in one turn, two child runs at once under the parent's budget.
    name: 'parallel-agents',
    script: ({ request }) => {
      if (request.messages[0].content === LOOKER_INSTRUCTIONS) return { text: `looked up ${request.messages.at(-1).content}` };
      const told = request.messages.filter((m: { role: string }) => m.role === 'tool');
      if (told.length > 0) return { text: told.map((m: { content: string }) => m.content).join('; ') };
      return { toolCalls: ['a.txt', 'b.txt'].map((prompt, i) => ({ id: `l${i}`, name: 'looker', arguments: { prompt } })) };
    },
    input: { prompt: 'Look up a.txt and b.txt', tools: ['looker'], budget: { maxTokens: 100_000 }, toolOrder: 'concurrent' },
  },
  {
    // quota-wait-apart: the budget has no room for about 5 s; the model call waits 2 s, says the run waits apart, the
    // run's awaitQuota waits the rest and hands its grant to the call (activities/quota.ts).
    name: 'quota-wait-apart',
    script: [{ text: 'Room at last.' }],
    input: { prompt: 'Say something once there is room.' },
    budget: { tokensPerMinute: 6_000, drawn: 6_000 },
  },
];

/** The recording worker's tool policy: it acts only on the calls of the `tool-policy` scenario. */
const RECORD_POLICY: ToolPolicy = (call) => {
  if (call.name === 'writeFile' && call.arguments?.path === 'policy-denied.txt') return { action: 'deny', message: 'Not on this worker.' };
  if (call.name === 'readFile' && call.arguments?.path === '../hello.txt') return { action: 'rewrite', arguments: { path: 'hello.txt' } };
  if (call.name === 'listFiles' && call.arguments?.path === 'policy-held') return { action: 'approve', reason: 'recorded hold' };
  return { action: 'allow' };
};

const LOOKER_INSTRUCTIONS = 'You look one thing up.';
/** The agents the recording worker registers, for scenarios that start with `agent` or call one as a tool. */
const AGENTS = [
  defineAgent({ name: 'reader', instructions: 'You read files and say what they hold.', tools: ['listFiles', 'readFile'], limits: { maxLoops: 4 } }),
  defineAgent({ name: 'looker', instructions: LOOKER_INSTRUCTIONS, model: 'record-parallel-agents', tools: [] }),
];

/** `npm run record-histories -- <name> ...` records only those scenarios, leaving the other histories as they are. */
async function main(only = process.argv.slice(2)) {
  const server = process.env.TEMPORAL_TEST_ADDRESS
    ? undefined
    : await startDevServer({ port: 17299, headless: true, dbFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'record-')), 'db.sqlite') });
  if (server) process.env.TEMPORAL_TEST_ADDRESS = server.address;
  const cli = await ensureTemporalCli({ quiet: true });
  // The short timeouts apply only to models named `times-out*`: the other scenarios' histories are as without them.
  const h = await startAgentHarness(undefined, { agents: AGENTS, toolPolicy: RECORD_POLICY, workflowInterceptorModules: [require.resolve('../test/support/short-model-timeouts')] });
  mkdirSync(OUT, { recursive: true });
  try {
    for (const scenario of SCENARIOS.filter((s) => only.length === 0 || only.includes(s.name))) {
      if (scenario.budget) await withBudget(scenario.budget, (budgeted) => record(budgeted, scenario, cli));
      else await record(h, scenario, cli);
    }
  } finally {
    await h.close();
    await server?.stop();
  }
}

/** A harness whose worker draws on a fresh budget in a redis-server of its own, of which `drawn` tokens are gone. */
async function withBudget(limits: { tokensPerMinute: number; drawn: number }, use: (h: AgentHarness) => Promise<void>): Promise<void> {
  const port = await freePort();
  const redis = await startRedis(port);
  const budget = await RedisBudget.connect({ url: `redis://127.0.0.1:${port}`, name: `record-${randomUUID()}`, tokensPerMinute: limits.tokensPerMinute });
  try {
    const drawn = await budget.tryAcquire('another-worker', limits.drawn, { arrivedMs: Date.now() });
    if (!drawn.granted) throw new Error('the fresh budget refused the other worker its tokens');
    await budget.settle(drawn.lease, drawn.tokens, drawn.tokens);
    const h = await startAgentHarness(undefined, { budget });
    try {
      await use(h);
    } finally {
      await h.close();
    }
  } finally {
    await budget.close();
    redis.kill('SIGKILL');
  }
}

/** Runs the scenario on `h` and writes its history. */
async function record(h: AgentHarness, scenario: Scenario, cli: string): Promise<void> {
  const model = Array.isArray(scenario.script) && scenario.script.length === 0 ? 'scripted-demo' : `record-${scenario.name}`;
  if (model !== 'scripted-demo') h.model.register(model, scenario.script);
  for (const [name, script] of Object.entries(scenario.models ?? {})) h.model.register(name, script);
  const handle = await h.start({ model, ...scenario.input });
  await scenario.drive?.(h, handle);
  await handle.result().catch(() => undefined); // failed runs are histories too
  // The CLI's JSON is the format `historyFromJSON` reads back.
  const json = execFileSync(cli, ['workflow', 'show', '--workflow-id', handle.workflowId, '--output', 'json', '--address', process.env.TEMPORAL_TEST_ADDRESS!]);
  // A reference would need this run's temporary blob store to replay: keep recorded payloads inline.
  if (json.includes('binary/claim-check')) throw new Error(`${scenario.name}: the history holds claim-check references; keep its payloads small`);
  writeFileSync(path.join(OUT, `${scenario.name}.json`), json);
  console.log(`recorded ${scenario.name}: ${JSON.parse(json.toString()).events.length} events`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
