import { WorkflowFailedError } from '@temporalio/client';
import { AgentRunFailedError } from '../../src/client';

/** The failure a workflow ended with: fails the test if the promise resolves, or rejects with anything else. */
export async function failureOf(promise: Promise<unknown>): Promise<{ message: string; type?: string }> {
  const err = await promise.then(
    () => {
      throw new Error('expected the workflow to fail');
    },
    (e: unknown) => e,
  );
  // `AgentRunHandle.result()` carries the reason itself; the SDK's handle has it in its cause.
  if (err instanceof AgentRunFailedError) return { message: err.reason, type: err.type };
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause as { message: string; type?: string };
  return { message: cause.message, type: cause.type };
}
