export { DEFAULT_BACKGROUND_RESERVE, DEFAULT_TENANT, RedisBudget, type BudgetLimits, type Grant, type RedisBudgetOptions } from './redis-budget';
import type { RedisBudget } from './redis-budget';

/**
 * What the activities need of a budget; `RedisBudget` is the fleet's. `hold` (optional: a budget of an embedder's own
 * may keep no leases) takes over a grant `acquire` made with a short `leaseMs` for the run's model call.
 */
export type ProviderBudget = Pick<RedisBudget, 'acquire' | 'settle' | 'penalize'> & Partial<Pick<RedisBudget, 'hold'>>;
