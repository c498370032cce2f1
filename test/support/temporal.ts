import { TestWorkflowEnvironment } from '@temporalio/testing';
import { closeSafeConnectionPlugin } from '../../src/config/connection';

/** Address of the dev server started by the jest global setup (or given in TEMPORAL_TEST_ADDRESS). */
export function testServerAddress(): string {
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run the tests through jest with its global setup');
  return address;
}

export const createTestEnv = (): Promise<TestWorkflowEnvironment> =>
  TestWorkflowEnvironment.createFromExistingServer({ address: testServerAddress(), plugins: [closeSafeConnectionPlugin] });
