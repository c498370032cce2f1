/**
 * Who a run belongs to: its tenant (the `AgentTenant` search attribute, plain text so that lists filter on it) and who
 * started it (the `agentOwner` memo). Set by `AgentClient.start` when given an owner (the gateway, for a signed
 * identity), passed on by a run to its children, and by a fork from the run it forks.
 */
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { defaultPayloadConverter, defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';
import { AGENT_OWNER_MEMO, AGENT_TENANT_SEARCH_ATTRIBUTE } from '../common/constants';
import { AgentRunNotFoundError } from './errors';

export const agentTenantKey = defineSearchAttributeKey(AGENT_TENANT_SEARCH_ATTRIBUTE, 'KEYWORD');

/** A run's owner: `tenant` null for a run without one (started by a service, or before tenants existed). */
export interface RunOwner {
  tenant: string | null;
  /** The `sub` of the identity that started the run (for a child or a fork, that of the run it came from); null when unknown. */
  startedBy: string | null;
}

/** The start options that record `owner`: the search attribute, and the memo. */
export function ownerStartOptions(owner: RunOwner | undefined): { typedSearchAttributes: SearchAttributePair[]; memo: Record<string, unknown> } {
  if (!owner?.tenant) return { typedSearchAttributes: [], memo: {} };
  return { typedSearchAttributes: [{ key: agentTenantKey, value: owner.tenant }], memo: { [AGENT_OWNER_MEMO]: { tenant: owner.tenant, startedBy: owner.startedBy } } };
}

const GRPC_NOT_FOUND = 5;

/**
 * The tenant of the run with this id (its latest execution), from the server alone (no worker, no memo to decode).
 * Rejects with `AgentRunNotFoundError` when there is no such run.
 */
export async function runTenant(client: Client, workflowId: string): Promise<string | null> {
  const described = await client.workflowService
    .describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId } })
    .catch((err: unknown) => {
      throw isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND ? new AgentRunNotFoundError(workflowId) : err;
    });
  const raw = described.workflowExecutionInfo?.searchAttributes?.indexedFields?.[AGENT_TENANT_SEARCH_ATTRIBUTE];
  const value: unknown = raw ? defaultPayloadConverter.fromPayload(raw) : undefined;
  return typeof value === 'string' && value ? value : null;
}
