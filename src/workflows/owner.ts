/**
 * The owner a run passes on to the runs it starts (named agents' child runs, a pattern's stages): its tenant (the
 * `AgentTenant` search attribute) and its `agentOwner` memo. A child is not given them by Temporal; without them a
 * tenant could not see its own run's children.
 */
import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import { workflowInfo } from '@temporalio/workflow';
import { AGENT_OWNER_MEMO, AGENT_TENANT_SEARCH_ATTRIBUTE } from '../common/constants';

const agentTenantKey = defineSearchAttributeKey(AGENT_TENANT_SEARCH_ATTRIBUTE, 'KEYWORD');

/** Start options of a child run: this run's tenant and owner memo, when it has them. */
export function inheritedOwner(): { typedSearchAttributes?: SearchAttributePair[]; memo?: Record<string, unknown> } {
  const info = workflowInfo();
  const tenant = info.typedSearchAttributes.get(agentTenantKey);
  const owner = info.memo?.[AGENT_OWNER_MEMO];
  return {
    ...(tenant ? { typedSearchAttributes: [{ key: agentTenantKey, value: tenant }] } : {}),
    ...(owner ? { memo: { [AGENT_OWNER_MEMO]: owner } } : {}),
  };
}

/**
 * The tenant the work a run schedules belongs to (its model calls in the fleet's budget, its activities and child runs
 * on the task queue): its input's `tenant`, or else its `AgentTenant`; undefined for none.
 */
export function runTenant(inputTenant: string | undefined): string | undefined {
  return inputTenant ?? workflowInfo().typedSearchAttributes.get(agentTenantKey);
}
