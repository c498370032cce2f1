/**
 * Child process for figure (f): the project's scripted model enforcing a provider's tokens per minute (a bucket that
 * refills continuously, answering 429 with retry-after above it), and the counts the figure reports.
 */
import { startScriptedModel } from '../../src/scripted-model';
import { serve } from './serve';

export const QUOTA_MODEL = 'bench-quota';

async function main(): Promise<void> {
  const tokensPerMinute = Number(process.env.BENCH_QUOTA_TPM);
  const model = await startScriptedModel({ tokensPerMinute });
  // About four characters a token, as the worker estimates: the prompt is what the run sends, the answer one word.
  model.register(QUOTA_MODEL, () => ({ text: 'done' }));
  serve({
    url: () => model.url,
    stats: () => {
      const requests = model.requests(QUOTA_MODEL);
      const perRun = new Map<string, number>();
      for (const r of requests) {
        if (!r.rateLimited) continue;
        const key = JSON.stringify(r.body?.messages?.find((m: { role: string }) => m.role === 'user')?.content ?? '');
        perRun.set(key, (perRun.get(key) ?? 0) + 1);
      }
      // The tokens the provider counts for one call, as the scripted model counts them: a quarter of the prompt's characters, and the answer.
      const first = requests.find((r) => r.completed && !r.rateLimited);
      const promptChars = (first?.body?.messages ?? []).reduce((n: number, m: { content?: unknown }) => n + (typeof m.content === 'string' ? m.content.length : 0), 0);
      return {
        tokensPerRequest: first ? Math.ceil(promptChars / 4) + 1 : 0,
        requests: requests.length,
        rateLimited: requests.filter((r) => r.rateLimited).length,
        answered: requests.filter((r) => r.completed && !r.rateLimited).length,
        max429sPerRun: Math.max(0, ...perRun.values()),
        runsWith429: perRun.size,
      };
    },
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
