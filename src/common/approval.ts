/** Which tool calls wait for a person: the one rule the machine and the model activity both apply. */

/** The run's `approval.tools` cover a call of `name` (`*`: every tool). */
export const approvalCovers = (approvalTools: readonly string[] | undefined, name: string): boolean =>
  !!approvalTools && (approvalTools.includes('*') || approvalTools.includes(name));
