/**
 * A tenant's burst (src/client/tenant-burst.ts) and a run's priority on Temporal's task queues (src/common/fairness.ts):
 * pure, on a clock the test sets. The runs' side (their tasks' priority on the server) is in test/fairness.test.ts.
 */
import { TenantBurst } from '../src/client/tenant-burst';
import { BACKGROUND_PRIORITY, temporalPriorityKey, tenantPriority } from '../src/common/fairness';
import { tenantBurstSettings } from '../src/config';

test('a tenant starts its burst at the priority it asks for, and the rest of the window in the background', () => {
  const burst = new TenantBurst({ runs: 3, windowMs: 1_000 });
  expect([0, 1, 2].map((t) => burst.priorityOf('a', undefined, t))).toEqual([undefined, undefined, undefined]);
  expect(burst.priorityOf('a', undefined, 3)).toBe(BACKGROUND_PRIORITY);
  // What it asked for counts when it is already the background's or later; a better priority does not get past it.
  expect(burst.priorityOf('a', 9, 4)).toBe(9);
  expect(burst.priorityOf('a', 0, 5)).toBe(BACKGROUND_PRIORITY);
  // Another tenant has its own burst; a run of no tenant (the service's) is not counted.
  expect(burst.priorityOf('b', 2, 6)).toBe(2);
  for (let i = 0; i < 10; i++) expect(burst.priorityOf(undefined, 4, 7)).toBe(4);
});

test("a start past the burst counts too: a tenant that keeps starting stays in the background until a window's starts are within it", () => {
  const burst = new TenantBurst({ runs: 2, windowMs: 1_000 });
  burst.priorityOf('a', undefined, 0);
  burst.priorityOf('a', undefined, 10);
  expect(burst.priorityOf('a', undefined, 900)).toBe(BACKGROUND_PRIORITY);
  // At 1,005 the starts of 0 left the window, but 10 and 900 are in it: still the background.
  expect(burst.priorityOf('a', undefined, 1_005)).toBe(BACKGROUND_PRIORITY);
  // A window after its last two starts (900, 1,005), the tenant is within its burst again.
  expect(burst.priorityOf('a', 5, 2_006)).toBe(5);
});

test('bad settings name what is wrong', () => {
  expect(() => new TenantBurst({ runs: 0 })).toThrow('tenant burst: runs must be a whole number ≥ 1, got 0');
  expect(() => new TenantBurst({ runs: 5, windowMs: -1 })).toThrow('tenant burst: windowMs must be a number > 0, got -1');
  expect(tenantBurstSettings({})).toEqual({ runs: 100, windowMs: 60_000 });
  expect(tenantBurstSettings({ AGENT_TENANT_BURST: '250' })).toEqual({ runs: 250, windowMs: 60_000 });
  expect(tenantBurstSettings({ AGENT_TENANT_BURST: 'off' })).toBeUndefined();
  expect(tenantBurstSettings({ AGENT_TENANT_BURST: '0' })).toBeUndefined();
  expect(() => tenantBurstSettings({ AGENT_TENANT_BURST: 'many' })).toThrow('AGENT_TENANT_BURST must be a whole number ≥ 1 (runs a tenant may start a minute) or off, got "many"');
});

test("a run's priority (0 first, 9 last) is one of Temporal's five priority keys (1 first), its default the server's", () => {
  expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(temporalPriorityKey)).toEqual([1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
  expect(temporalPriorityKey(undefined)).toBeUndefined();
  expect(tenantPriority(undefined)).toEqual({});
  expect(tenantPriority('acme')).toEqual({ priority: { fairnessKey: 'acme' } });
  expect(tenantPriority('acme', BACKGROUND_PRIORITY)).toEqual({ priority: { priorityKey: 5, fairnessKey: 'acme' } });
  expect(tenantPriority(null, 0)).toEqual({ priority: { priorityKey: 1 } });
});
