/**
 * Child process: the floor. A plain in-process `while (true)` agent loop with the `openai` client: no durability,
 * nothing persisted. It makes the same streaming call as the product's `callModel` activity and reads the same file.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { serve } from '../lib/serve';
import { BENCH_MODEL, promptOf, READ_FILE_TOOL, SYSTEM_PROMPT } from '../lib/workload';

interface RunsRequest {
  modelUrl: string;
  workspace: string;
  runs: Array<{ runId: string; steps: number }>;
}

async function agent(openai: OpenAI, workspace: string, runId: string, steps: number): Promise<string> {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: promptOf(runId, steps) },
  ];
  for (;;) {
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
    if (calls.length === 0) return text;
    messages.push({ role: 'assistant', content: text || null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) });
    for (const call of calls) {
      const args = JSON.parse(call.arguments) as { path: string };
      messages.push({ role: 'tool', tool_call_id: call.id, content: await readFile(path.join(workspace, args.path), 'utf8') });
    }
  }
}

serve({
  async runs({ modelUrl, workspace, runs }: RunsRequest) {
    // The client's own defaults (two retries): a plain loop has nothing else to survive a refused connection.
    const openai = new OpenAI({ baseURL: modelUrl, apiKey: 'bench', timeout: 10 * 60_000 });
    const started = Date.now();
    const results = await Promise.all(
      runs.map(({ runId, steps }) =>
        agent(openai, workspace, runId, steps).then(
          (answer) => ({ runId, ok: true, answer, endedAt: Date.now() }),
          (err: unknown) => ({ runId, ok: false, error: String(err), endedAt: Date.now() }),
        ),
      ),
    );
    return { started, results };
  },
});
