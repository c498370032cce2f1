/**
 * Starts the scripted model (canned answers, not a real LLM) for the offline demo.
 * Usage: PORT=8787 npm run scripted-model
 */
import { DEMO_SCRIPT_NAME, startScriptedModel } from '../src/scripted-model';

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${process.env.PORT}"`);

  // SCRIPTED_MODEL_TOKENS_PER_MINUTE: answer 429 above this many tokens per rolling minute, as a provider's quota does.
  const tpm = process.env.SCRIPTED_MODEL_TOKENS_PER_MINUTE ? Number(process.env.SCRIPTED_MODEL_TOKENS_PER_MINUTE) : undefined;
  if (tpm !== undefined && !(Number.isInteger(tpm) && tpm > 0)) throw new Error(`SCRIPTED_MODEL_TOKENS_PER_MINUTE must be a whole number > 0, got "${process.env.SCRIPTED_MODEL_TOKENS_PER_MINUTE}"`);
  const model = await startScriptedModel({ port, host: '127.0.0.1', tokensPerMinute: tpm, recordBodies: false, maxRecordedRequests: 1_000 });
  console.log(`Scripted model listening on ${model.url}`);
  console.log(`This is a scripted model, not a real LLM: it answers from canned scripts (default script "${DEMO_SCRIPT_NAME}").`);
  console.log(`Point an OpenAI client at base URL ${model.url} with model "${DEMO_SCRIPT_NAME}". Ctrl+C to stop.`);

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await model.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
