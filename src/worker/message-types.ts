/**
 * protobufjs builds a message type's converters (`decode`, `encode`, `fromObject`, ...) the first time the type is used,
 * by generating and compiling their source. The first workflow task and the first activity task after a restart paid
 * for every type they held, on the critical path of the restart:
 * - the SDK's workflow thread converts every activation with `WorkflowActivation.fromObject` (about 30 ms for an
 *   activation that starts a run, measured alone). The thread is idle while the main thread loads (early-thread.ts),
 *   so workflow-thread-main.ts builds them there;
 * - the main thread decodes activations and activity tasks from the SDK's core and encodes their completions (about
 *   50 ms for all of them). It is idle while the workflow thread takes the bundle, so `AgentSdkWorker` builds them then.
 */
import { coresdk } from '@temporalio/proto';

/** The part of protobufjs's reflected `Type` this module uses (protobufjs is the SDK's dependency, not the product's). */
interface MessageType {
  readonly fieldsArray: ReadonlyArray<{ resolve(): { readonly resolvedType: unknown } }>;
  setup(): unknown;
}

function isMessageType(value: unknown): value is MessageType {
  return typeof value === 'object' && value !== null && Array.isArray((value as MessageType).fieldsArray) && typeof (value as MessageType).setup === 'function';
}

/** protobufjs's own mark of a built type: `setup` puts the generated converters on the type, over its prototype's. */
function isBuilt(type: MessageType): boolean {
  return Object.prototype.hasOwnProperty.call(type, 'decode');
}

/**
 * Builds the converters of each root and of every message type their fields can hold, however deep. Returns how many
 * types that was. Types built already (by use, or by an earlier call: a process that creates several workers) are
 * left as they are.
 */
export function setUpMessageTypes(...roots: unknown[]): number {
  const seen = new Set<MessageType>();
  for (const root of roots) {
    if (!isMessageType(root)) throw new TypeError('setUpMessageTypes needs protobufjs message types, such as coresdk.workflow_activation.WorkflowActivation');
    seen.add(root);
  }
  for (const type of seen) {
    for (const field of type.fieldsArray) {
      const nested = field.resolve().resolvedType;
      if (isMessageType(nested)) seen.add(nested);
    }
    if (!isBuilt(type)) type.setup();
  }
  return seen.size;
}

/** The types the workflow thread converts every activation through. */
export function setUpActivationTypes(): number {
  return setUpMessageTypes(coresdk.workflow_activation.WorkflowActivation);
}

/** The types the main thread decodes workflow and activity tasks from, and encodes their completions and heartbeats in. */
export function setUpTaskTypes(): number {
  return setUpMessageTypes(
    coresdk.workflow_activation.WorkflowActivation,
    coresdk.workflow_completion.WorkflowActivationCompletion,
    coresdk.activity_task.ActivityTask,
    coresdk.ActivityTaskCompletion,
    coresdk.ActivityHeartbeat,
  );
}
