/**
 * Imported first by the worker's entry, for its side effect: the SDK's workflow thread starts loading on the second
 * core while this thread loads the SDK, `openai`, `zod` and the product (src/worker/early-thread.ts says why).
 */
import { startWorkflowThreadEarly } from '../worker/early-thread';

startWorkflowThreadEarly();
