/**
 * protobufjs builds a message type's converters (`decode`, `encode`, `fromObject`, ...) the first time the type is used,
 * by generating and compiling their source. The SDK's workflow thread converts every activation with
 * `WorkflowActivation.fromObject`, so the first workflow task after a restart paid for every type that activation held,
 * on the critical path of the restart (about 30 ms for an activation that starts a run, measured alone). The thread
 * is idle while the main thread loads (early-thread.ts), so workflow-thread-main.ts builds them there.
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

/**
 * Builds the converters of `root` and of every message type its fields can hold, however deep. Returns how many types
 * that was. Types whose converters were built already are built again, which is harmless: call it once, early.
 */
export function setUpMessageTypes(root: unknown): number {
  if (!isMessageType(root)) throw new TypeError('setUpMessageTypes needs a protobufjs message type, such as coresdk.workflow_activation.WorkflowActivation');
  const seen = new Set<MessageType>([root]);
  for (const type of seen) {
    for (const field of type.fieldsArray) {
      const nested = field.resolve().resolvedType;
      if (isMessageType(nested)) seen.add(nested);
    }
    type.setup();
  }
  return seen.size;
}

/** The types the workflow thread converts every activation through. */
export function setUpActivationTypes(): number {
  return setUpMessageTypes(coresdk.workflow_activation.WorkflowActivation);
}
