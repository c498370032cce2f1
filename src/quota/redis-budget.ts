/**
 * One provider quota for the whole fleet (issue 26): tokens per minute, requests per minute and concurrent requests,
 * kept in Redis, the stream's broker, so every worker on every host draws from the same budget.
 *
 * - Tokens and requests are token buckets that refill continuously (a rolling minute, as providers count, not fixed
 *   windows that allow twice the rate across a boundary). A call reserves its estimated tokens before it starts and
 *   settles with the provider's reported usage; the difference goes back to, or is taken from, the bucket.
 * - Concurrent requests are leases that expire, so a worker that dies mid-call frees its slot after `leaseMs`.
 * - Waiting calls queue across the fleet, one queue per tenant, each ordered by priority and then arrival; the tenants
 *   share the budget fairly (start-time fair queueing, weighted): one that floods it waits behind its own calls, not
 *   the others'. Only the one call served next is granted, so a run with a huge context waits its turn and cannot be
 *   overtaken forever, nor starve the others (its estimate is capped at the bucket's size). A waiter that stops asking
 *   drops out of the queue after `waiterTtlMs`.
 * - Calls of the background priority (8 and 9: a tenant's runs past its burst, or batch work) leave a share of each
 *   bucket and of the concurrent requests (`backgroundReserve`) to calls of better priority, which then start without
 *   waiting for the refill of what a flood drew. The refill still goes to the background when nothing better waits.
 * - A 429 that still happens empties the token bucket and blocks the budget until its `retry-after`.
 * All of it runs in Lua on the Redis server's clock, so hosts' clocks do not matter.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@redis/client';
import { BACKGROUND_PRIORITY } from '../common/fairness';

export interface BudgetLimits {
  /** Tokens (prompt + completion) per rolling minute; 0 or unset: no limit. */
  tokensPerMinute?: number;
  /** Requests per rolling minute; 0 or unset: no limit. */
  requestsPerMinute?: number;
  /** Requests in flight at once; 0 or unset: no limit. */
  maxConcurrent?: number;
}

export interface RedisBudgetOptions extends BudgetLimits {
  /** `redis://host:port`. */
  url: string;
  /** The budget's name: the provider, or the provider and key (never the key itself). */
  name: string;
  /** A lease (one call in flight) not settled within this is freed. @default 600000 (10 min) */
  leaseMs?: number;
  /** A waiter that has not asked again within this leaves the queue. @default 15000 */
  waiterTtlMs?: number;
  /** @default `agent:quota:` */
  keyPrefix?: string;
  /** Each tenant's weight in the fair share (a tenant of weight 2 gets twice the share of one of 1). @default 1 each */
  tenantWeights?: Readonly<Record<string, number>>;
  /**
   * The share of each limit (tokens and requests a minute, concurrent requests) that calls of the background priority
   * (8 and 9) leave to calls of better priority: 0.2 leaves a fifth of the buckets and of the slots. 0: none.
   * @default DEFAULT_BACKGROUND_RESERVE (0.2)
   */
  backgroundReserve?: number;
}

/** The share of the budget background calls leave to the others, unless `backgroundReserve` says otherwise. */
export const DEFAULT_BACKGROUND_RESERVE = 0.2;

export type Grant = { granted: true; lease: string; tokens: number } | { granted: false; waitMs: number; position: number };

/**
 * KEYS: state hash, leases zset, active-tenants set, waiter-expiry zset, owners hash (request id -> tenant), virtual
 * times hash (tenant -> its virtual time). Each tenant's queue is the zset `ARGV[11] .. tenant` (one Redis, not a cluster).
 * ARGV: request id, tokens, score (priority and arrival), tokens/min, requests/min, max concurrent, lease ms, waiter ttl
 * ms, tenant, the tenant's weight, queue key prefix, the background's reserve (a share of each limit), the background
 * priority.
 * Returns {1, tokens} when granted (the lease is the request id), else {0, waitMs, position}.
 *
 * Fair share is start-time fair queueing over the tenants: each tenant has a virtual time that grows, at each grant,
 * by the call's share of the budget (the largest of its tokens over tokens/min, one over requests/min, one over max
 * concurrent) over the tenant's weight. Only one call is served next: the head of the tenant whose head has the best
 * priority, then the least virtual time, then the earliest arrival. A tenant that comes back from idle starts at the
 * virtual time of the last call served, so it banks no credit while away. A call of the background priority sees each
 * limit less the reserve.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, want, score = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local tpm, rpm, maxc = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local leaseMs, waiterTtl = tonumber(ARGV[7]), tonumber(ARGV[8])
local tenant, weight, qprefix = ARGV[9], tonumber(ARGV[10]), ARGV[11]
local myP = math.floor(score / 1e13)
local reserve = 0
if myP >= tonumber(ARGV[13]) then reserve = tonumber(ARGV[12]) end
local function dequeue(who, owner)
  local q = qprefix .. owner
  redis.call('ZREM', q, who)
  if redis.call('ZCARD', q) == 0 then redis.call('SREM', KEYS[3], owner) end
  redis.call('HDEL', KEYS[5], who)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, w in ipairs(dead) do
  local owner = redis.call('HGET', KEYS[5], w)
  if owner then dequeue(w, owner) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
local vnow = tonumber(redis.call('HGET', KEYS[1], 'vnow')) or 0
local q = qprefix .. tenant
if not redis.call('ZSCORE', q, id) then
  if redis.call('ZCARD', q) == 0 then
    local v = tonumber(redis.call('HGET', KEYS[6], tenant)) or 0
    if v < vnow then redis.call('HSET', KEYS[6], tenant, vnow) end
  end
  redis.call('ZADD', q, score, id)
  redis.call('SADD', KEYS[3], tenant)
  redis.call('HSET', KEYS[5], id, tenant)
end
redis.call('ZADD', KEYS[4], now + waiterTtl, id)
local s = redis.call('HMGET', KEYS[1], 'tokens', 'requests', 'at', 'blocked')
local at = tonumber(s[3]) or now
local elapsed = math.max(0, now - at)
local tokens = tpm > 0 and math.min(tpm, (tonumber(s[1]) or tpm) + elapsed * tpm / 60000) or 0
local requests = rpm > 0 and math.min(rpm, (tonumber(s[2]) or rpm) + elapsed * rpm / 60000) or 0
local blocked = tonumber(s[4]) or 0
local keepT, keepR, slots = reserve * tpm, reserve * rpm, math.max(1, maxc - math.floor(reserve * maxc))
if tpm > 0 and want > tpm - keepT then want = math.floor(tpm - keepT) end
local wait = 0
if blocked > now then wait = blocked - now end
if tpm > 0 and tokens - keepT < want then wait = math.max(wait, math.ceil((want + keepT - tokens) * 60000 / tpm)) end
if rpm > 0 and requests - keepR < 1 then wait = math.max(wait, math.ceil((1 + keepR - requests) * 60000 / rpm)) end
if maxc > 0 and redis.call('ZCARD', KEYS[2]) >= slots then wait = math.max(wait, 50) end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'requests', requests, 'at', now)
-- The one call served next, and how many tenants' heads come before this call's tenant.
local best, bestP, bestV, bestA, bestT = nil, 0, 0, 0, ''
local heads = {}
for _, tn in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local h = redis.call('ZRANGE', qprefix .. tn, 0, 0, 'WITHSCORES')
  if #h == 0 then
    redis.call('SREM', KEYS[3], tn)
  else
    local sc = tonumber(h[2])
    local p = math.floor(sc / 1e13)
    local v = tonumber(redis.call('HGET', KEYS[6], tn)) or 0
    local a = sc - p * 1e13
    heads[#heads + 1] = {p, v, a, tn}
    if best == nil or p < bestP or (p == bestP and (v < bestV or (v == bestV and (a < bestA or (a == bestA and tn < bestT))))) then
      best, bestP, bestV, bestA, bestT = h[1], p, v, a, tn
    end
  end
end
if wait == 0 and best == id then
  local cost = 0
  if tpm > 0 then cost = math.max(cost, want / tpm) end
  if rpm > 0 then cost = math.max(cost, 1 / rpm) end
  if maxc > 0 then cost = math.max(cost, 1 / maxc) end
  if cost == 0 then cost = 1 end
  if tpm > 0 then redis.call('HSET', KEYS[1], 'tokens', tokens - want) end
  if rpm > 0 then redis.call('HSET', KEYS[1], 'requests', requests - 1) end
  local v = tonumber(redis.call('HGET', KEYS[6], tenant)) or 0
  if v > vnow then redis.call('HSET', KEYS[1], 'vnow', tostring(v)) end
  redis.call('HSET', KEYS[6], tenant, tostring(v + cost / weight))
  redis.call('ZADD', KEYS[2], now + leaseMs, id)
  dequeue(id, tenant)
  redis.call('ZREM', KEYS[4], id)
  return {1, want}
end
-- Its place: 0 only for the call served next; else the calls ahead of it in its tenant's queue, times the tenants
-- served in turn, plus the tenants whose heads come first.
if best == id then return {0, math.max(wait, 1), 0} end
local rank = redis.call('ZRANK', q, id)
local mine = tonumber(redis.call('HGET', KEYS[6], tenant)) or 0
local before = 0
for _, h in ipairs(heads) do
  if h[4] ~= tenant and (h[1] < myP or (h[1] == myP and h[2] <= mine)) then before = before + 1 end
end
return {0, math.max(wait, 1), rank * #heads + before}
`;

/**
 * KEYS: state hash, leases zset. ARGV: lease, reserved tokens, used tokens, tokens/min.
 * Gives back what was reserved and not used, or takes what was used beyond it (down to one minute's debt).
 */
const SETTLE = `
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
local tpm = tonumber(ARGV[4])
if tpm > 0 then
  local diff = tonumber(ARGV[2]) - tonumber(ARGV[3])
  local cur = tonumber(redis.call('HGET', KEYS[1], 'tokens') or tpm)
  redis.call('HSET', KEYS[1], 'tokens', math.max(-tpm, math.min(tpm, cur + diff)))
end
return removed
`;

/** KEYS: state hash. ARGV: ms to block. The provider said no: nothing more until then, and the bucket starts empty. */
const PENALIZE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'blocked') or 0)
if until_ > cur then redis.call('HSET', KEYS[1], 'blocked', until_) end
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or 0)
if tokens > 0 then redis.call('HSET', KEYS[1], 'tokens', 0, 'at', until_) end
return until_ - now
`;

/** KEYS: waiter-expiry zset. ARGV: request id, ms. A waiter that will be away for a while keeps its place that long. */
const KEEP_PLACE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
`;

/** KEYS: leases zset. ARGV: lease, ms. The lease (granted or expired) runs `ms` from now. */
const HOLD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
`;

/** KEYS: active-tenants set, waiter-expiry zset, owners hash. ARGV: request id, queue key prefix. Leaves the queue without a grant. */
const LEAVE = `
local owner = redis.call('HGET', KEYS[3], ARGV[1])
if owner then
  local q = ARGV[2] .. owner
  redis.call('ZREM', q, ARGV[1])
  if redis.call('ZCARD', q) == 0 then redis.call('SREM', KEYS[1], owner) end
  redis.call('HDEL', KEYS[3], ARGV[1])
end
return redis.call('ZREM', KEYS[2], ARGV[1])
`;

/** The tenant of calls that name none: every run without a `tenant` shares it. */
export const DEFAULT_TENANT = 'default';

/** Priorities run from 0 (first) to 9; arrival orders calls of one priority. */
const scoreOf = (priority: number, arrivedMs: number) => Math.min(9, Math.max(0, Math.round(priority))) * 1e13 + arrivedMs;

function limitsOf(opts: RedisBudgetOptions): Required<BudgetLimits> {
  const limits = { tokensPerMinute: opts.tokensPerMinute ?? 0, requestsPerMinute: opts.requestsPerMinute ?? 0, maxConcurrent: opts.maxConcurrent ?? 0 };
  for (const [k, v] of Object.entries(limits)) if (!Number.isFinite(v) || v < 0) throw new Error(`budget ${opts.name}: ${k} must be a number ≥ 0, got ${v}`);
  const reserve = opts.backgroundReserve ?? DEFAULT_BACKGROUND_RESERVE;
  if (!Number.isFinite(reserve) || reserve < 0 || reserve >= 1) throw new Error(`budget ${opts.name}: backgroundReserve must be a share ≥ 0 and < 1, got ${reserve}`);
  for (const [tenant, w] of Object.entries(opts.tenantWeights ?? {})) if (!Number.isFinite(w) || w <= 0) throw new Error(`budget ${opts.name}: tenantWeights.${tenant} must be a number > 0, got ${w}`);
  if (!/^[\w.:-]{1,200}$/.test(opts.name)) throw new Error(`budget name must be letters, digits and . : _ - (the provider, not the key), got ${JSON.stringify(opts.name)}`);
  return limits;
}

const newClient = (url: string) => createClient({ url, RESP: 2, socket: { connectTimeout: 2_000 } });

export class RedisBudget {
  private readonly keys: { state: string; leases: string; tenants: string; waiters: string; owners: string; virtual: string; queuePrefix: string };
  private readonly weights: Readonly<Record<string, number>>;
  private readonly limits: Required<BudgetLimits>;
  private readonly leaseMs: number;
  private readonly waiterTtlMs: number;
  private readonly backgroundReserve: number;

  private constructor(
    private readonly client: ReturnType<typeof newClient>,
    opts: RedisBudgetOptions,
  ) {
    const base = `${opts.keyPrefix ?? 'agent:quota:'}${opts.name}`;
    this.keys = { state: `${base}:state`, leases: `${base}:leases`, tenants: `${base}:tenants`, waiters: `${base}:waiters`, owners: `${base}:owners`, virtual: `${base}:vt`, queuePrefix: `${base}:queue:` };
    this.weights = opts.tenantWeights ?? {};
    this.limits = limitsOf(opts);
    this.leaseMs = opts.leaseMs ?? 600_000;
    this.waiterTtlMs = opts.waiterTtlMs ?? 15_000;
    this.backgroundReserve = opts.backgroundReserve ?? DEFAULT_BACKGROUND_RESERVE;
  }

  static async connect(opts: RedisBudgetOptions): Promise<RedisBudget> {
    limitsOf(opts); // refused before a connection is made
    const client = newClient(opts.url);
    client.on('error', () => undefined); // commands reject while down; the caller decides
    await client.connect();
    return new RedisBudget(client, opts);
  }

  /**
   * One attempt to take `tokens` for request `id` (stable across attempts: it keeps the request's place in the queue),
   * of `tenant` (absent: the default tenant; keep it the same across attempts).
   */
  async tryAcquire(id: string, tokens: number, opts: { priority?: number; tenant?: string; arrivedMs: number; leaseMs?: number }): Promise<Grant> {
    const { tokensPerMinute: tpm, requestsPerMinute: rpm, maxConcurrent } = this.limits;
    const tenant = opts.tenant ?? DEFAULT_TENANT;
    const weight = this.weights[tenant] ?? 1;
    const reply = await this.client.eval(ACQUIRE, {
      keys: [this.keys.state, this.keys.leases, this.keys.tenants, this.keys.waiters, this.keys.owners, this.keys.virtual],
      arguments: [
        id,
        String(Math.max(0, Math.ceil(tokens))),
        String(scoreOf(opts.priority ?? 5, opts.arrivedMs)),
        String(tpm),
        String(rpm),
        String(maxConcurrent),
        String(opts.leaseMs ?? this.leaseMs),
        String(this.waiterTtlMs),
        tenant,
        String(weight),
        this.keys.queuePrefix,
        String(this.backgroundReserve),
        String(BACKGROUND_PRIORITY),
      ],
    });
    const [ok, a, b] = reply as number[];
    return ok === 1 ? { granted: true, lease: id, tokens: a } : { granted: false, waitMs: a, position: b };
  }

  /**
   * Takes over a lease granted for a hand-off (`acquire` with a short `leaseMs`): it runs the budget's whole `leaseMs`
   * from now. A lease that expired meanwhile is held again.
   */
  async hold(lease: string): Promise<void> {
    await this.client.eval(HOLD, { keys: [this.keys.leases], arguments: [lease, String(this.leaseMs)] });
  }

  /** Ends a call: frees its slot and settles its tokens with what the provider reported. */
  async settle(lease: string, reserved: number, used: number): Promise<void> {
    await this.client.eval(SETTLE, { keys: [this.keys.state, this.keys.leases], arguments: [lease, String(reserved), String(Math.max(0, Math.ceil(used))), String(this.limits.tokensPerMinute)] });
  }

  /** The provider answered 429: the whole fleet holds off for `retryAfterMs`. Returns how long the block lasts. */
  async penalize(retryAfterMs: number): Promise<number> {
    return (await this.client.eval(PENALIZE, { keys: [this.keys.state], arguments: [String(Math.max(0, Math.ceil(retryAfterMs)))] })) as number;
  }

  /**
   * Waits until `tokens` are granted, asking again as the budget refills; `onWait` hears each expected wait (the run
   * shows it), and `signal` stops the wait (abort, pause, activity cancellation) and leaves the queue. With
   * `untilMs`, gives up at that time with the last answer instead, keeping the request's place in the queue for
   * `keepPlaceMs` (the run waits elsewhere and asks again with the same `id` and `arrivedMs`). With `leaseMs`, the
   * grant's slot is freed after that unless `hold` or `settle` comes first (a grant handed to another activity).
   */
  async acquire(
    id: string,
    tokens: number,
    opts: { priority?: number; tenant?: string; arrivedMs?: number; signal?: AbortSignal; onWait?: (waitMs: number, position: number) => void; untilMs?: number; keepPlaceMs?: number; leaseMs?: number } = {},
  ): Promise<Grant> {
    const arrivedMs = opts.arrivedMs ?? Date.now();
    for (;;) {
      opts.signal?.throwIfAborted();
      const g = await this.tryAcquire(id, tokens, { priority: opts.priority, tenant: opts.tenant, arrivedMs, leaseMs: opts.leaseMs });
      if (g.granted) return g;
      opts.onWait?.(g.waitMs, g.position);
      // The head waits for what it needs; the others ask again often enough to keep their place.
      const pause = g.position === 0 ? Math.min(g.waitMs, this.waiterTtlMs / 3) : Math.min(this.waiterTtlMs / 3, Math.max(g.waitMs, 100 + 10 * g.position));
      if (opts.untilMs !== undefined && Date.now() + pause > opts.untilMs) {
        if (opts.keepPlaceMs) await this.client.eval(KEEP_PLACE, { keys: [this.keys.waiters], arguments: [id, String(opts.keepPlaceMs)] });
        return g;
      }
      try {
        await sleep(pause, undefined, { signal: opts.signal });
      } catch (err) {
        await this.leave(id).catch(() => undefined);
        throw opts.signal?.aborted ? opts.signal.reason : err;
      }
    }
  }

  /** Leaves the queue without a grant. */
  async leave(id: string): Promise<void> {
    await this.client.eval(LEAVE, { keys: [this.keys.tenants, this.keys.waiters, this.keys.owners], arguments: [id, this.keys.queuePrefix] });
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
