/**
 * A turn's tool calls run in the model's order wherever order can matter (common/tool-order.ts), through the client
 * on the real dev server: a call with side effects runs after every call before it, and the calls after it see what
 * it did, even pure ones the model call could have run ahead; calls without side effects still run beside each other.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defineTool } from '../src/activities';
import { AgentClient } from '../src/client';
import type { ScriptContext, ScriptStep } from '../src/scripted-model/types';
import { startAgentHarness, sleep, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;
let agents: AgentClient;
const log: string[] = [];

/** A tool with side effects whose calls take the time they are told: run at once, the shorter would end first. */
const note = defineTool({
  name: 'note',
  description: 'Append a word to the log after a delay.',
  parameters: z.object({ word: z.string(), delayMs: z.number() }),
  sideEffects: true,
  async execute({ word, delayMs }) {
    await sleep(delayMs);
    log.push(word);
    return `noted ${word}`;
  },
});

/** A pure tool that answers only once `n` of its calls are in flight together, or says it was alone after 5 s. */
let waiting: Array<() => void> = [];
const together = defineTool({
  name: 'together',
  description: 'Look something up (slowly).',
  parameters: z.object({ n: z.number() }),
  sideEffects: false,
  async execute({ n }) {
    const met = new Promise<boolean>((resolve) => {
      waiting.push(() => resolve(true));
      setTimeout(() => resolve(false), 5_000);
    });
    if (waiting.length >= n) {
      waiting.forEach((release) => release());
      waiting = [];
    }
    return (await met) ? 'together' : 'alone';
  },
});

beforeAll(async () => {
  h = await startAgentHarness({ 'order.txt': 'OLD', 'hello.txt': 'hello' }, { tools: [note, together] });
  agents = new AgentClient(h.env.client, h.taskQueue);
}, 120_000);
afterAll(async () => h?.close());

/** Calls `calls` in one turn, then answers with every tool result, in order. */
function oneTurn(calls: Array<{ name: string; arguments: Record<string, unknown> }>) {
  return ({ callIndex, request }: ScriptContext): ScriptStep =>
    callIndex === 0
      ? { toolCalls: calls.map((c, i) => ({ id: `t${i}`, ...c })) }
      : { text: request.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content).join(' | ') };
}

test('a read after a write in the same turn sees the write, though reads may run ahead in the model call', async () => {
  h.model.register('write-then-read', oneTurn([
    { name: 'writeFile', arguments: { path: 'order.txt', content: 'NEW' } },
    { name: 'readFile', arguments: { path: 'order.txt' } },
  ]));
  const run = await agents.start({ prompt: 'Write order.txt, then read it', model: 'write-then-read' });
  expect((await run.result()).answer).toBe('wrote 3 bytes to order.txt | NEW');
  expect(readFileSync(path.join(h.workspace, 'order.txt'), 'utf8')).toBe('NEW');
});

test('a read before a write in the same turn runs ahead and sees the file as it was', async () => {
  h.model.register('read-then-write', oneTurn([
    { name: 'readFile', arguments: { path: 'hello.txt' } },
    { name: 'writeFile', arguments: { path: 'hello.txt', content: 'changed' } },
  ]));
  const run = await agents.start({ prompt: 'Read hello.txt, then change it', model: 'read-then-write' });
  expect((await run.result()).answer).toBe('hello | wrote 7 bytes to hello.txt');
});

test('calls with side effects run one after another in the model order; the answer lists their results in that order', async () => {
  log.length = 0;
  h.model.register('two-notes', oneTurn([
    { name: 'note', arguments: { word: 'first', delayMs: 800 } },
    { name: 'note', arguments: { word: 'second', delayMs: 0 } },
  ]));
  const run = await agents.start({ prompt: 'Note two words', model: 'two-notes' });
  expect((await run.result()).answer).toBe('noted first | noted second');
  expect(log).toEqual(['first', 'second']);
});

test('calls without side effects run beside each other, between the calls with side effects around them', async () => {
  log.length = 0;
  h.model.register('fan-out', oneTurn([
    { name: 'note', arguments: { word: 'before', delayMs: 300 } },
    { name: 'together', arguments: { n: 2 } },
    { name: 'together', arguments: { n: 2 } },
    { name: 'note', arguments: { word: 'after', delayMs: 0 } },
  ]));
  const run = await agents.start({ prompt: 'Note, look up twice, note', model: 'fan-out' });
  expect((await run.result()).answer).toBe('noted before | together | together | noted after');
  expect(log).toEqual(['before', 'after']);
});

test("toolOrder 'concurrent' runs a turn's calls with side effects at once", async () => {
  log.length = 0;
  h.model.register('two-notes-at-once', oneTurn([
    { name: 'note', arguments: { word: 'slow', delayMs: 800 } },
    { name: 'note', arguments: { word: 'fast', delayMs: 0 } },
  ]));
  const run = await agents.start({ prompt: 'Note two words', model: 'two-notes-at-once', toolOrder: 'concurrent' });
  expect((await run.result()).answer).toBe('noted slow | noted fast');
  expect(log).toEqual(['fast', 'slow']);
});
