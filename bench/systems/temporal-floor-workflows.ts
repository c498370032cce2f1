/**
 * The least a Temporal agent can be, for the bench's `temporal-floor` system: one activity a step (the plain loop's
 * model call and its tool calls, `agentStep`), and a workflow that only appends what each step added to the
 * conversation. No state machine, no queries, no signals, no search attributes, no conversation store: what is left
 * is what a server round trip a step costs on its own.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { TemporalFloorActivities } from './temporal-floor-worker';

const { step } = proxyActivities<TemporalFloorActivities>({ startToCloseTimeout: '5 minutes', retry: { initialInterval: '1 second' } });

export async function temporalFloor(systemPrompt: string, prompt: string): Promise<string> {
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: systemPrompt },
    { role: 'user', content: prompt },
  ];
  for (;;) {
    const { answer, added } = await step(messages);
    if (answer !== undefined) return answer;
    messages.push(...added);
  }
}
