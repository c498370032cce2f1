// Benchmark peer: Temporal's own AI SDK integration. The agent loop is the AI SDK's `generateText` with a tool,
// running inside the workflow; every model call is the plugin's `invokeModel` activity and the tool is an activity.
import { generateText, isStepCount, jsonSchema, tool } from 'ai';
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';

const { readFile } = proxyActivities({ startToCloseTimeout: '2 minutes' });

export async function aiSdkAgent({ prompt, steps, system, model, tool: toolName }) {
  const result = await generateText({
    model: temporalProvider.languageModel(model),
    system,
    prompt,
    tools: {
      [toolName]: tool({
        description: 'Read a UTF-8 text file from the workspace.',
        inputSchema: jsonSchema({
          type: 'object',
          properties: { path: { type: 'string', minLength: 1, maxLength: 1024, description: 'Path relative to the workspace root' } },
          required: ['path'],
          additionalProperties: false,
        }),
        execute: async ({ path }) => readFile(path),
      }),
    },
    stopWhen: isStepCount(steps + 1),
  });
  return result.text;
}
