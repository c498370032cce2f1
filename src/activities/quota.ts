/**
 * The model activity's side of the fleet's provider budget (src/quota): reserve before the request, settle with the
 * provider's reported usage after it, and tell the budget about a 429 that still happens.
 */
import type { ChatMessage, ModelRequest, QuotaGrant, QuotaGrantLease, QuotaWait } from '../common/chat';
import type { ProviderBudget } from '../quota';
import { retryAfterMs } from './errors';

/** Tokens a call is expected to use before the provider says: about four characters a token, plus the answer. */
export function estimateTokens(messages: ChatMessage[], maxOutputTokens: number | undefined): number {
  let chars = 0;
  for (const m of messages) {
    chars += typeof m.content === 'string' ? m.content.length : 0;
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) chars += c.name.length + c.arguments.length;
  }
  return Math.ceil(chars / 4) + (maxOutputTokens ?? DEFAULT_ANSWER_TOKENS);
}

/** What an answer is assumed to take when the run sets no output limit; settling corrects it. */
const DEFAULT_ANSWER_TOKENS = 512;

/**
 * How long one attempt waits in the activity: briefly the first time, in the model call, so the run shows the wait
 * within seconds; then, in the run's `awaitQuota` activity (or an earlier release's model call), up to most of its
 * 5-minute start-to-close timeout. A longer wait goes on in the run, wait after wait.
 */
const FIRST_WAIT_MS = 2_000;
const LATER_WAIT_MS = 240_000;
/** The call's place in the queue outlives the time between two activities of the run. */
const KEEP_PLACE_MS = 60_000;
/**
 * A grant `awaitQuota` hands to the run's model call holds its slot this long; the call takes it over (`hold`). A run
 * stopped in between frees the slot then, not after the budget's whole lease (10 minutes).
 */
export const HANDOFF_LEASE_MS = 60_000;

export interface Reservation {
  /** Settles with the tokens the provider reported (the reservation when it reported none); once. */
  settle(usedTokens: number | undefined): Promise<void>;
}

/**
 * Waits for room for the call; answers with a reservation, or with the wait the run shows when there was none within
 * this attempt. `id` names the call across attempts and asks (the run and its call number).
 */
export async function reserve(
  budget: ProviderBudget,
  id: string,
  request: ModelRequest,
  messages: ChatMessage[],
  signal: AbortSignal,
): Promise<Reservation | QuotaWait> {
  const grant = request.quota?.grant;
  if (grant) return granted(budget, grant);
  const waitMs = request.quota?.queuedAt === undefined ? FIRST_WAIT_MS : LATER_WAIT_MS;
  const g = await waitInLine(budget, id, request, messages, signal, waitMs);
  return 'quotaWait' in g ? g : settling(budget, g.lease, g.tokens);
}

/**
 * One bounded wait of the call in the budget's line, from its place (`quota.queuedAt`, else now): the grant, or the
 * wait the run shows; `leaseMs`: the grant's own lease, when it is handed to another activity.
 */
async function waitInLine(
  budget: ProviderBudget,
  id: string,
  request: ModelRequest,
  messages: ChatMessage[],
  signal: AbortSignal,
  waitMs: number,
  leaseMs?: number,
): Promise<QuotaWait | QuotaGrantLease> {
  const queuedAt = request.quota?.queuedAt ?? Date.now();
  const opts = { priority: request.quota?.priority, tenant: request.quota?.tenant, arrivedMs: queuedAt, signal, untilMs: Date.now() + waitMs, keepPlaceMs: KEEP_PLACE_MS, leaseMs };
  const g = await budget.acquire(id, estimateTokens(messages, request.maxOutputTokens), opts);
  return g.granted ? { lease: g.lease, tokens: g.tokens } : { quotaWait: { waitMs: g.waitMs, position: g.position, queuedAt }, waitsApart: true };
}

/** The model call takes over the grant its run's `awaitQuota` made: it holds the slot, and settles it as its own. */
async function granted(budget: ProviderBudget, grant: QuotaGrantLease): Promise<Reservation> {
  await budget.hold?.(grant.lease);
  return settling(budget, grant.lease, grant.tokens);
}

/**
 * The wait of a call the budget sent back once (`waitsApart`), in the run's `awaitQuota` activity: up to LATER_WAIT_MS,
 * then the wait again. A grant is handed to the run's model call (HANDOFF_LEASE_MS); one that comes as the wait is
 * stopped goes back to the budget at once, and the stop is thrown.
 */
export async function awaitGrant(
  budget: ProviderBudget,
  id: string,
  request: ModelRequest,
  messages: ChatMessage[],
  signal: AbortSignal,
): Promise<QuotaWait | QuotaGrant> {
  const g = await waitInLine(budget, id, request, messages, signal, LATER_WAIT_MS, HANDOFF_LEASE_MS);
  if ('quotaWait' in g) return g;
  if (signal.aborted) {
    await budget.settle(g.lease, g.tokens, 0).catch(() => undefined);
    throw signal.reason;
  }
  return { quotaGrant: { lease: g.lease, tokens: g.tokens } };
}

function settling(budget: ProviderBudget, lease: string, tokens: number): Reservation {
  let settled = false;
  return {
    async settle(used) {
      if (settled) return;
      settled = true;
      await budget.settle(lease, tokens, used ?? tokens);
    },
  };
}

/**
 * A non-streamed call (the critic, compaction) under the budget: it waits for room inside its activity (heartbeating,
 * cancellable), then settles with the reported usage; a 429 holds the fleet off. Without a budget it just calls.
 */
export async function budgeted<T extends { usage?: { total_tokens?: number } | null }>(
  budget: ProviderBudget | undefined,
  id: string,
  messages: ChatMessage[],
  signal: AbortSignal,
  call: () => Promise<T>,
): Promise<T> {
  if (!budget) return call();
  const g = await budget.acquire(id, estimateTokens(messages, undefined), { signal });
  if (!g.granted) throw new Error('machine bug: an unbounded budget wait ended without a grant');
  let used: number | undefined;
  try {
    const response = await call();
    used = response.usage?.total_tokens;
    return response;
  } catch (err) {
    if ((err as { status?: unknown } | null)?.status === 429) await budget.penalize(retryAfterMs(headersOf(err)) ?? 1_000).catch(() => undefined);
    throw err;
  } finally {
    await budget.settle(g.lease, g.tokens, used ?? g.tokens).catch(() => undefined);
  }
}

/** The response headers of a provider's error (the openai client's APIError carries them). */
export function headersOf(err: unknown): Headers | undefined {
  const headers = (err as { headers?: unknown } | null)?.headers;
  return headers instanceof Headers ? headers : undefined;
}
