/**
 * Serves a real model offline: llama.cpp's llama-server with SmolLM2-135M-Instruct, built and cached on first use.
 * Usage: npm run real-model                  (PORT=8080, REAL_MODEL_CONTEXT=8192, REAL_MODEL_MAX_TOKENS=512, REAL_MODEL_THREADS=1)
 *        npm run setup:real-model            (only provision it, as CI does)
 */
import { ensureRealModel, realModelCacheDir, startRealModel } from './lib/real-model';

function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return value;
}

async function main(): Promise<void> {
  if (process.argv.includes('--setup')) {
    const started = Date.now();
    const paths = await ensureRealModel();
    console.log(`real model ready in ${Math.round((Date.now() - started) / 1000)} s (cache ${realModelCacheDir()}):`);
    for (const [name, value] of Object.entries(paths)) console.log(`  ${name}: ${value}`);
    return;
  }
  const port = intFromEnv('PORT', 8080, 1, 65535);
  const contextSize = intFromEnv('REAL_MODEL_CONTEXT', 8192, 256, 8192);
  const maxTokens = intFromEnv('REAL_MODEL_MAX_TOKENS', 512, 1, contextSize);
  const threads = intFromEnv('REAL_MODEL_THREADS', 1, 1, 256);

  const server = await startRealModel({ port, contextSize, maxTokens, threads });
  console.log(`llama-server with ${server.model} (${contextSize}-token context, answers up to ${maxTokens} tokens) on ${server.url}`);
  console.log('Run a worker against it in another terminal:');
  console.log(`  LLM_BASE_URL=${server.url} LLM_API_KEY=none LLM_MODEL=${server.model} npm run worker`);
  console.log('The model is tiny (135M parameters): it calls tools only when the prompt ends with "<tool_call>". Ctrl+C to stop.');

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.stop();
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
