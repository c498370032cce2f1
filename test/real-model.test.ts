/**
 * The real-model tier: agentRun on the real dev server, through the real `openai` client, against llama.cpp's
 * llama-server with SmolLM2-135M-Instruct (scripts/lib/real-model.ts). Compatibility with a real server's streams,
 * usage, tool calls, disconnects and context errors; everything deterministic stays with the scripted model.
 */
import { spawnSync } from 'node:child_process';
import type { WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import { defineTool } from '../src/activities/tools/registry';
import { abortSignal, stateQuery, type AgentRunResult, type RunStateView } from '../src/common/messages';
import { ensureRealModel, startRealModel, type RealModelServer } from '../scripts/lib/real-model';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

/** Small enough that a tool result of a few thousand words overflows it. */
const CONTEXT_TOKENS = 2048;
/** The model writes about 60 tokens a second on 2 cores. */
const MAX_TOKENS = 512;
/** The model is tiny: it calls a tool when the user message ends with the template's tool-call tag. */
const NUDGE = '\n<tool_call>\n';
/** About 480 tokens that end on their own, just under MAX_TOKENS: streams for several seconds, never cut off. */
const LONG_ANSWER = 'Explain in detail how a car engine works, step by step.';

/** Inspection entries of varied sentences, about 3.3 characters a token (numbers cost). */
const INSPECTIONS = Array.from({ length: 400 }, (_, i) => {
  const rooms = ['kitchen', 'library', 'attic', 'cellar', 'hallway', 'studio', 'garage', 'balcony'];
  const findings = ['dry and clean', 'slightly damp', 'freshly painted', 'in need of new wiring', 'draughty near the window'];
  return `Entry ${i + 1}: the ${rooms[i % rooms.length]} on floor ${(i % 4) + 1} was inspected on day ${(i % 28) + 1} and found ${findings[i % findings.length]}.`;
}).join('\n');
/** How much of INSPECTIONS the tool returns; each test sets it before its run. */
let inspectionChars = 0;
/** A name and a prompt the model reliably answers with exactly one call (found by trying; it ignores `readReport`). */
const listInspections = defineTool({
  name: 'listInspections',
  description: 'List the inspections of the building.',
  parameters: z.object({}),
  sideEffects: false,
  execute: async () => INSPECTIONS.slice(0, inspectionChars),
});
const INSPECTIONS_PROMPT = `List the inspections of the building.${NUDGE}`;

let server: RealModelServer;
let h: AgentHarness;
beforeAll(async () => {
  // Provisioned by the global setup; on a machine without the cache this builds llama-server (about 8 minutes).
  server = await startRealModel({ contextSize: CONTEXT_TOKENS, maxTokens: MAX_TOKENS });
  h = await startAgentHarness({ 'hello.txt': 'Hello from the workspace\nsecond line\n' }, { llm: { baseURL: server.url, model: server.model }, tools: [listInspections] });
}, 20 * 60_000);
afterAll(async () => {
  await h?.close();
  await server?.stop();
});

const slotBusy = async (): Promise<boolean> => {
  const slots = (await (await fetch(`${server.origin}/slots`)).json()) as Array<{ is_processing: boolean }>;
  return slots.some((s) => s.is_processing);
};
const events = (s: RunStateView) => s.transitions.map((t) => `${t.event}->${t.to}`);

/** The run's result; a failure names the run's transitions and last messages, since a real model's moves are not scripted. */
async function resultOf(handle: WorkflowHandle): Promise<AgentRunResult> {
  try {
    return await handle.result();
  } catch (err) {
    const s = await handle.query(stateQuery, { includeMessages: true });
    const tail = (s.messages ?? []).slice(-4).map((m) => `${m.role}: ${JSON.stringify(m).slice(0, 160)}`);
    throw new Error(`${(err as { cause?: Error }).cause?.message ?? String(err)}\n  transitions: ${events(s).join(', ')}\n  last messages:\n    ${tail.join('\n    ')}`);
  }
}

test('the cached llama-server is portable: no AVX-512 or AMX instruction that a CPU of this kind may lack or fault on', async () => {
  const { serverPath } = await ensureRealModel();
  // A native build on a CPU with AMX compiled ggml's tile kernels, which died with SIGSEGV on the first matmul.
  const disassembly = spawnSync('objdump', ['-d', '--no-show-raw-insn', serverPath], { encoding: 'utf8', maxBuffer: 2 ** 31 - 1 });
  expect(disassembly.status).toBe(0);
  expect(disassembly.stdout).toMatch(/\bvfmadd\w*ps\b.*%ymm/);
  expect(disassembly.stdout).not.toMatch(/\b(ldtilecfg|tileloadd\w*|tdpb\w*)\b/);
  expect(disassembly.stdout).not.toMatch(/%zmm\d/);
}, 120_000);

test('a plain answer completes with the usage the server reported', async () => {
  const handle = await h.start({ prompt: 'What is the capital of France? Answer in one sentence.', tools: ['listFiles'] });
  const result: AgentRunResult = await resultOf(handle);

  expect(result.status).toBe('COMPLETED');
  expect(result.answer?.trim().length).toBeGreaterThan(0);
  expect(result.usage.modelCalls).toBeGreaterThanOrEqual(1);
  expect(result.usage.promptTokens).toBeGreaterThan(0);
  expect(result.usage.completionTokens).toBeGreaterThan(0);
}, 120_000);

test('a long answer streams: partialText grows while STREAMING, then usage is counted', async () => {
  const handle = await h.start({ prompt: LONG_ANSWER, tools: ['listFiles'], limits: { maxLoops: 2 } });
  const first = await h.waitForState(handle, (s) => s.state === 'STREAMING' && s.partialText.length > 0, 60_000);
  const later = await h.waitForState(handle, (s) => s.state === 'STREAMING' && s.partialText.length > first.partialText.length + 20, 60_000);
  expect(later.partialText.startsWith(first.partialText)).toBe(true);

  const result = await resultOf(handle);
  expect(result.answer!.startsWith(later.partialText.slice(0, 100))).toBe(true);
  expect(result.usage.completionTokens).toBeGreaterThan(50);
  expect(result.usage.promptTokens).toBeGreaterThan(0);
}, 180_000);

test('a nudged tool call runs the tool and hands its result back to the model', async () => {
  const handle = await h.start({ prompt: `List the files in the workspace.${NUDGE}`, tools: ['listFiles', 'readFile'], limits: { maxLoops: 3 } });
  await handle.result().catch(() => undefined); // The tiny model may loop; the tool round trip is what counts here.

  const state = await handle.query(stateQuery, { includeMessages: true });
  expect(state.transitions.map((t) => t.to)).toContain('TOOL_EXECUTING');
  expect(state.toolCalls).toBeGreaterThanOrEqual(1);
  const toolResults = (state.messages ?? []).filter((m) => m.role === 'tool');
  expect(toolResults.length).toBeGreaterThanOrEqual(1);
  expect(toolResults[0].content.length).toBeGreaterThan(0);
}, 180_000);

test('abort during a stream closes the request on the server and ends the run ABORTED', async () => {
  const handle = await h.start({ prompt: LONG_ANSWER, tools: ['listFiles'] });
  await h.waitForState(handle, (s) => s.state === 'STREAMING' && s.partialText.length > 20, 60_000);
  expect(await slotBusy()).toBe(true);

  const abortedAt = Date.now();
  await handle.signal(abortSignal, { reason: 'enough' });
  const result = await resultOf(handle);
  expect(result).toMatchObject({ status: 'ABORTED', reason: 'aborted: enough' });
  // The server stops generating once the client closes the stream, well before its -n cap.
  await waitFor(async () => ((await slotBusy()) ? undefined : true), 5_000, 'llama-server to drop the request');
  expect(Date.now() - abortedAt).toBeLessThan(6_000);
}, 120_000);

test('llama-server killed mid-stream and restarted on the same port: the run completes', async () => {
  const handle = await h.start({ prompt: LONG_ANSWER, tools: ['listFiles'], limits: { maxLoops: 2 } });
  await h.waitForState(handle, (s) => s.state === 'STREAMING' && s.partialText.length > 20, 60_000);
  const pid = server.pid;
  await server.kill();
  await server.restart();
  expect(server.pid).not.toBe(pid);

  const result = await resultOf(handle);
  expect(result.status).toBe('COMPLETED');
  expect(result.answer?.length).toBeGreaterThan(0);
  // The model call in flight was retried after the dropped connection: its activity started a second attempt.
  const history = (await handle.fetchHistory()).events ?? [];
  const attempts = history.map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0);
  expect(Math.max(...attempts)).toBeGreaterThan(1);
}, 180_000);

test('a tool result that outgrows the context: llama-server refuses it, the run compacts and completes', async () => {
  inspectionChars = 7_000; // about 2,100 tokens: with the prompt around it, over the server's 2,048
  // Calls: the tool call, the refused request, the answer after compaction, one continuation of it.
  const handle = await h.start({ prompt: INSPECTIONS_PROMPT, tools: ['listInspections'], maxOutputTokens: 128, limits: { maxLoops: 4 } });
  const result = await resultOf(handle);

  const state = await handle.query(stateQuery);
  expect(state.toolCalls).toBeGreaterThanOrEqual(1);
  expect(events(state)).toContain('CONTEXT_OVERFLOW->COMPACTING');
  expect(events(state)).toContain('COMPACTED->STREAMING');
  // The tiny model rambles to its -n cap after the summary; the answer is continued, and ends with its text.
  expect(result.status).toBe('COMPLETED');
  expect(result.answer?.length).toBeGreaterThan(0);
}, 400_000);

test('with contextWindowTokens, a growing conversation is compacted before the server refuses it', async () => {
  // About 1,350 tokens (1,125 even at 4 characters a token): with the prompt, past 80% of the declared 1,400 and within
  // the server's 2,048, so only the run's own estimate can lead to COMPACTING.
  inspectionChars = 4_500;
  const handle = await h.start({
    prompt: INSPECTIONS_PROMPT,
    tools: ['listInspections'],
    contextWindowTokens: 1_400,
    limits: { maxLoops: 6 },
  });
  const result = await resultOf(handle);

  const state = await handle.query(stateQuery);
  expect(state.toolCalls).toBeGreaterThanOrEqual(1);
  expect(state.transitions.map((t) => t.to)).toContain('COMPACTING');
  expect(state.transitions.map((t) => t.event)).not.toContain('CONTEXT_OVERFLOW');
  expect(result.status).toBe('COMPLETED');
}, 300_000);
