/**
 * Child process: the floor. A plain in-process `while (true)` agent loop with the `openai` client: no durability,
 * nothing persisted. It makes the same streaming call as the product's `callModel` activity and reads the same file.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { agentStep } from '../lib/agent-step';
import { serve } from '../lib/serve';
import { promptOf, SYSTEM_PROMPT } from '../lib/workload';

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
    const { answer, added } = await agentStep(openai, workspace, messages);
    if (answer !== undefined) return answer;
    messages.push(...added);
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
