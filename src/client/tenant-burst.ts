/**
 * A tenant's burst: how many runs it may start in a window at the priority it asks for. Its further runs in the window
 * start at the background priority (`BACKGROUND_PRIORITY`), so a tenant that floods the fleet with a batch queues its
 * batch behind the other tenants' runs on Temporal's task queues and in the provider budget, instead of sharing them
 * half and half (docs/quota.md, "A tenant's burst"). Counted per client process: a fleet of N gateways lets a tenant
 * start up to N bursts a window before its runs move to the background.
 */
import { BACKGROUND_PRIORITY } from '../common/fairness';

export interface TenantBurstOptions {
  /** Runs a tenant may start in `windowMs` at its own priority; the next go to the background. */
  runs: number;
  /** @default 60000 (a minute) */
  windowMs?: number;
}

/** Tenants idle longer than this many windows are forgotten, so the map does not grow with every tenant ever seen. */
const FORGET_AFTER_WINDOWS = 2;

export class TenantBurst {
  readonly runs: number;
  readonly windowMs: number;
  /** Each tenant's start times in the window, oldest first, at most `runs` of them. */
  private readonly starts = new Map<string, number[]>();
  private sweptAt = 0;

  constructor(opts: TenantBurstOptions) {
    if (!Number.isInteger(opts.runs) || opts.runs < 1) throw new Error(`tenant burst: runs must be a whole number ≥ 1, got ${opts.runs}`);
    const windowMs = opts.windowMs ?? 60_000;
    if (!Number.isFinite(windowMs) || windowMs <= 0) throw new Error(`tenant burst: windowMs must be a number > 0, got ${opts.windowMs}`);
    this.runs = opts.runs;
    this.windowMs = windowMs;
  }

  /**
   * The priority a run of `tenant` that asked for `priority` starts at, counting the start: as asked within the
   * tenant's burst, else at least the background's. A run of no tenant is not counted (it belongs to the service).
   */
  priorityOf(tenant: string | undefined, priority: number | undefined, now = Date.now()): number | undefined {
    if (!tenant) return priority;
    this.sweep(now);
    let times = this.starts.get(tenant);
    if (!times) this.starts.set(tenant, (times = []));
    while (times.length && times[0]! <= now - this.windowMs) times.shift();
    const within = times.length < this.runs;
    // Only the last `runs` starts decide whether the next is within the burst.
    times.push(now);
    if (times.length > this.runs) times.shift();
    return within ? priority : Math.max(priority ?? BACKGROUND_PRIORITY, BACKGROUND_PRIORITY);
  }

  private sweep(now: number) {
    if (now - this.sweptAt < this.windowMs) return;
    this.sweptAt = now;
    for (const [tenant, times] of this.starts) if (!times.length || times[times.length - 1]! <= now - FORGET_AFTER_WINDOWS * this.windowMs) this.starts.delete(tenant);
  }
}
