/**
 * One step of the plain agent loop: the streamed model call (the same call as the product's `callModel` activity),
 * then the `readFile` calls it asked for. The floor runs it in a loop; the `temporal-floor` system runs it as its one
 * activity.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { BENCH_MODEL, READ_FILE_TOOL } from './workload';

/** The messages the step adds to the conversation, or, when the model called no tool, its answer. */
export async function agentStep(openai: OpenAI, workspace: string, messages: ChatCompletionMessageParam[]): Promise<{ answer?: string; added: ChatCompletionMessageParam[] }> {
  const stream = await openai.chat.completions.create({
    model: BENCH_MODEL,
    messages,
    tools: [READ_FILE_TOOL],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      for (const tc of choice.delta?.tool_calls ?? []) {
        const call = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) call.id = tc.id;
        call.name += tc.function?.name ?? '';
        call.arguments += tc.function?.arguments ?? '';
      }
    }
  }
  if (calls.length === 0) return { answer: text, added: [] };
  const added: ChatCompletionMessageParam[] = [
    { role: 'assistant', content: text || null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) },
  ];
  for (const call of calls) {
    const args = JSON.parse(call.arguments) as { path: string };
    added.push({ role: 'tool', tool_call_id: call.id, content: await readFile(path.join(workspace, args.path), 'utf8') });
  }
  return { added };
}
