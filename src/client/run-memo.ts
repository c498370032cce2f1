/**
 * What a run carries from its start for lists, tenancy and the Temporal UI, whoever starts it (`AgentClient.start`, or
 * a schedule's action): the search attributes, the memo and the summary.
 */
import { tenantPriority, type TaskPriority } from '../common/fairness';
import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import { AGENT_RUN_MEMO, AGENT_STATE_SEARCH_ATTRIBUTE } from '../common/constants';
import type { AgentRunInput } from '../common/input';
import { AgentState } from '../common/states';
import { ownerStartOptions, type RunOwner } from './owner';

const agentStateKey = defineSearchAttributeKey(AGENT_STATE_SEARCH_ATTRIBUTE, 'KEYWORD');
const SUMMARY_CHARS = 80;

/**
 * The start fields of a run of `input` owned by `owner`: `AgentState` IDLE (filterable at once), the tenant's
 * attribute and memo, the run memo, and the UI's summary.
 */
export function runStartFields(
  input: AgentRunInput,
  owner: RunOwner | undefined,
): { typedSearchAttributes: SearchAttributePair[]; memo: Record<string, unknown>; staticSummary: string; priority?: TaskPriority } {
  const owned = ownerStartOptions(owner);
  return {
    typedSearchAttributes: [{ key: agentStateKey, value: AgentState.IDLE }, ...owned.typedSearchAttributes],
    memo: { [AGENT_RUN_MEMO]: runMemo(input), ...owned.memo },
    staticSummary: summarize(input.prompt),
    // Its workflow and activity tasks queue as its tenant's (Temporal's fairness key), at its priority: one tenant's
    // backlog on the task queue does not hold another's tasks behind it, and a run's priority orders its tasks as it
    // orders its model calls. Its activities, children and continuations inherit both.
    ...tenantPriority(input.tenant, input.priority),
  };
}

/** The memo the run list reads (AGENT_RUN_MEMO): a fork names the run and step it carries on from. */
export function runMemo(input: AgentRunInput): { prompt: string; agent: string | null; origin: { workflowId: string; step: number } | null } {
  return { prompt: input.prompt.slice(0, 1_000), agent: input.agent ?? null, origin: (input.resume?.kind === 'fork' && input.resume.origin) || null };
}

/** The UI's one-line summary: the prompt's first characters, whitespace collapsed. */
export function summarize(prompt: string): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return line.length > SUMMARY_CHARS ? `${line.slice(0, SUMMARY_CHARS - 3)}...` : line;
}
