export { DEFAULT_BACKGROUND_RESERVE, DEFAULT_TENANT, RedisBudget, type BudgetLimits, type Grant, type RedisBudgetOptions } from './redis-budget';
import type { RedisBudget } from './redis-budget';

/** What the activities need of a budget; `RedisBudget` is the fleet's. */
export type ProviderBudget = Pick<RedisBudget, 'acquire' | 'settle' | 'penalize'>;
