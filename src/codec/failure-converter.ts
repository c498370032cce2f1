/**
 * The failure converter used with encryption (`failureConverterPath` in `createDataConverter`): error messages and
 * stack traces move into an encoded payload, so the codec encrypts them like any other data. Without it they would
 * stay plain text in history, and a model error or a tool failure can quote the conversation.
 * Loaded by path in the workflow sandbox as well: import nothing but `@temporalio/common` here.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
