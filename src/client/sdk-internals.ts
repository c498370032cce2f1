/**
 * The SDK internals the client uses, in one place. No public API decodes a pending activity's last failure from a raw
 * `describeWorkflowExecution` (the SDK's `describe()` leaves `raw` undecoded) or turns a proto timestamp into a Date;
 * these are the SDK's own helpers, pinned with the SDK's exact version in package.json. An upgrade checks them here.
 */
export { decodeArrayFromPayloads, decodeOptionalFailureToOptionalError } from '@temporalio/common/lib/internal-non-workflow';
export { optionalTsToDate } from '@temporalio/common/lib/time';
