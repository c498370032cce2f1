/** Which tool calls wait for a person, and which may run before the run decides: rules the machine and the model activity share. */
import type { ToolCall } from './chat';

/** The run's `approval.tools` cover a call of `name` (`*`: every tool). */
export const approvalCovers = (approvalTools: readonly string[] | undefined, name: string): boolean =>
  !!approvalTools && (approvalTools.includes('*') || approvalTools.includes(name));

/**
 * A call the model activity may run ahead, inside the model call, and the machine may take the result of: a pure
 * `local` tool that no person has to approve and the tool policy neither denied nor held for approval.
 */
export const mayRunAhead = (call: ToolCall, approvalTools: readonly string[] | undefined): boolean =>
  call.local === true && !approvalCovers(approvalTools, call.name) && (call.policy === undefined || call.policy.action === 'rewrite');
