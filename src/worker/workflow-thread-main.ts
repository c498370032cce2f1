/**
 * The entry of the product's workflow thread: the SDK's own (`ThreadedVMWorkflowCreator` spawns the same file), with
 * the promise hook that formats a promise's stack when it is read (promise-stacks.ts), and the converters of every
 * activation built before the first one arrives (message-types.ts). early-thread.ts starts it.
 */
import '@temporalio/worker/lib/workflow/workflow-worker-thread';
import { setUpActivationTypes } from './message-types';
import { installLazyPromiseStacks } from './promise-stacks';

installLazyPromiseStacks();
try {
  setUpActivationTypes();
} catch {
  // Only a head start: the first activation builds what it needs, as the SDK's own thread does.
}
