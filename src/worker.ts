/**
 * The agent worker: `npm run worker`. Polls the `agent-runs` task queue for workflow and activity tasks.
 * With no LLM_API_KEY and no LLM_BASE_URL it serves the project's scripted model in-process and says so.
 */
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import OpenAI from 'openai';
import { createActivities, type ActivityDeps } from './activities';
import { llmSettings, temporalSettings, usesScriptedModel, workspaceDir, type LlmSettings } from './config';
import { DEMO_SCRIPT_NAME, startScriptedModel, type ScriptedModel } from './scripted-model';

export const DEFAULT_MODEL = 'gpt-4o-mini';

/** Options every agent worker needs; callers add connection, task queue and workflow code. */
export function agentWorkerOptions(deps: ActivityDeps): Pick<WorkerOptions, 'activities' | 'maxHeartbeatThrottleInterval'> {
  return {
    activities: createActivities(deps),
    // Cancellation reaches an activity on its next heartbeat; keep that within a second so abort is prompt.
    maxHeartbeatThrottleInterval: '1 second',
  };
}

export function openAIClient(llm: Required<Pick<LlmSettings, 'baseURL'>> & LlmSettings): OpenAI {
  // Temporal owns retries (classified by error kind); the client must not retry behind its back.
  return new OpenAI({ baseURL: llm.baseURL, apiKey: llm.apiKey ?? 'not-needed', maxRetries: 0, timeout: 10 * 60_000 });
}

export async function runWorker(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const temporal = temporalSettings(env);
  let llm = llmSettings(env);
  let scripted: ScriptedModel | undefined;
  if (usesScriptedModel(llm)) {
    scripted = await startScriptedModel();
    llm = { baseURL: scripted.url, model: llm.model ?? DEMO_SCRIPT_NAME };
    console.log(`worker: no LLM_API_KEY or LLM_BASE_URL, using the scripted model at ${scripted.url} (offline demo, not a real LLM)`);
  }
  const connection = await NativeConnection.connect({ address: temporal.address });
  try {
    const worker = await Worker.create({
      connection,
      namespace: temporal.namespace,
      taskQueue: temporal.taskQueue,
      workflowsPath: require.resolve('./workflows'),
      ...agentWorkerOptions({
        openai: openAIClient({ ...llm, baseURL: llm.baseURL ?? 'https://api.openai.com/v1' }),
        defaultModel: llm.model ?? DEFAULT_MODEL,
        workspace: workspaceDir(env),
      }),
    });
    console.log(`worker: polling task queue ${temporal.taskQueue} on ${temporal.address} (namespace ${temporal.namespace})`);
    await worker.run();
  } finally {
    await connection.close();
    await scripted?.close();
  }
}

if (require.main === module) {
  runWorker().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
