import { WorkflowFailedError } from '@temporalio/client';

/** The failure a workflow ended with: fails the test if the promise resolves, or rejects with anything else. */
export async function failureOf(promise: Promise<unknown>): Promise<{ message: string; type?: string }> {
  const err = await promise.then(
    () => {
      throw new Error('expected the workflow to fail');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause as { message: string; type?: string };
  return { message: cause.message, type: cause.type };
}
