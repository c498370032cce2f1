/**
 * One provider quota for the whole fleet (issue 26): tokens per minute, requests per minute and concurrent requests,
 * kept in Redis, the stream's broker, so every worker on every host draws from the same budget.
 *
 * - Tokens and requests are token buckets that refill continuously (a rolling minute, as providers count, not fixed
 *   windows that allow twice the rate across a boundary). A call reserves its estimated tokens before it starts and
 *   settles with the provider's reported usage; the difference goes back to, or is taken from, the bucket.
 * - Concurrent requests are leases that expire, so a worker that dies mid-call frees its slot after `leaseMs`.
 * - Waiting calls form one queue across the fleet, ordered by priority and then arrival: a call is granted only at the
 *   head, so a run with a huge context waits its turn and cannot be overtaken forever, nor starve the others (its
 *   estimate is capped at the bucket's size). A waiter that stops asking drops out of the queue after `waiterTtlMs`.
 * - A 429 that still happens empties the token bucket and blocks the budget until its `retry-after`.
 * All of it runs in Lua on the Redis server's clock, so hosts' clocks do not matter.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@redis/client';

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
}

export type Grant = { granted: true; lease: string; tokens: number } | { granted: false; waitMs: number; position: number };

/**
 * KEYS: state hash, leases zset, queue zset, waiter-expiry zset.
 * ARGV: request id, tokens, score (priority and arrival), tokens/min, requests/min, max concurrent, lease ms, waiter ttl ms.
 * Returns {1, tokens} when granted (the lease is the request id), else {0, waitMs, position}.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, want, score = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local tpm, rpm, maxc = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local leaseMs, waiterTtl = tonumber(ARGV[7]), tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
for _, w in ipairs(dead) do redis.call('ZREM', KEYS[3], w) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
redis.call('ZADD', KEYS[3], 'NX', score, id)
redis.call('ZADD', KEYS[4], now + waiterTtl, id)
local s = redis.call('HMGET', KEYS[1], 'tokens', 'requests', 'at', 'blocked')
local at = tonumber(s[3]) or now
local elapsed = math.max(0, now - at)
local tokens = tpm > 0 and math.min(tpm, (tonumber(s[1]) or tpm) + elapsed * tpm / 60000) or 0
local requests = rpm > 0 and math.min(rpm, (tonumber(s[2]) or rpm) + elapsed * rpm / 60000) or 0
local blocked = tonumber(s[4]) or 0
if tpm > 0 and want > tpm then want = tpm end
local wait = 0
if blocked > now then wait = blocked - now end
if tpm > 0 and tokens < want then wait = math.max(wait, math.ceil((want - tokens) * 60000 / tpm)) end
if rpm > 0 and requests < 1 then wait = math.max(wait, math.ceil((1 - requests) * 60000 / rpm)) end
if maxc > 0 and redis.call('ZCARD', KEYS[2]) >= maxc then wait = math.max(wait, 50) end
local rank = redis.call('ZRANK', KEYS[3], id)
redis.call('HSET', KEYS[1], 'tokens', tokens, 'requests', requests, 'at', now)
if wait == 0 and rank == 0 then
  if tpm > 0 then redis.call('HSET', KEYS[1], 'tokens', tokens - want) end
  if rpm > 0 then redis.call('HSET', KEYS[1], 'requests', requests - 1) end
  redis.call('ZADD', KEYS[2], now + leaseMs, id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
  return {1, want}
end
return {0, math.max(wait, 1), rank}
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

/** Priorities run from 0 (first) to 9; arrival orders calls of one priority. */
const scoreOf = (priority: number, arrivedMs: number) => Math.min(9, Math.max(0, Math.round(priority))) * 1e13 + arrivedMs;

function limitsOf(opts: RedisBudgetOptions): Required<BudgetLimits> {
  const limits = { tokensPerMinute: opts.tokensPerMinute ?? 0, requestsPerMinute: opts.requestsPerMinute ?? 0, maxConcurrent: opts.maxConcurrent ?? 0 };
  for (const [k, v] of Object.entries(limits)) if (!Number.isFinite(v) || v < 0) throw new Error(`budget ${opts.name}: ${k} must be a number ≥ 0, got ${v}`);
  if (!/^[\w.:-]{1,200}$/.test(opts.name)) throw new Error(`budget name must be letters, digits and . : _ - (the provider, not the key), got ${JSON.stringify(opts.name)}`);
  return limits;
}

const newClient = (url: string) => createClient({ url, RESP: 2, socket: { connectTimeout: 2_000 } });

export class RedisBudget {
  private readonly keys: { state: string; leases: string; queue: string; waiters: string };
  private readonly limits: Required<BudgetLimits>;
  private readonly leaseMs: number;
  private readonly waiterTtlMs: number;

  private constructor(
    private readonly client: ReturnType<typeof newClient>,
    opts: RedisBudgetOptions,
  ) {
    const base = `${opts.keyPrefix ?? 'agent:quota:'}${opts.name}`;
    this.keys = { state: `${base}:state`, leases: `${base}:leases`, queue: `${base}:queue`, waiters: `${base}:waiters` };
    this.limits = limitsOf(opts);
    this.leaseMs = opts.leaseMs ?? 600_000;
    this.waiterTtlMs = opts.waiterTtlMs ?? 15_000;
  }

  static async connect(opts: RedisBudgetOptions): Promise<RedisBudget> {
    limitsOf(opts); // refused before a connection is made
    const client = newClient(opts.url);
    client.on('error', () => undefined); // commands reject while down; the caller decides
    await client.connect();
    return new RedisBudget(client, opts);
  }

  /** One attempt to take `tokens` for request `id` (stable across attempts: it keeps the request's place in the queue). */
  async tryAcquire(id: string, tokens: number, opts: { priority?: number; arrivedMs: number }): Promise<Grant> {
    const { tokensPerMinute: tpm, requestsPerMinute: rpm, maxConcurrent } = this.limits;
    const reply = await this.client.eval(ACQUIRE, {
      keys: [this.keys.state, this.keys.leases, this.keys.queue, this.keys.waiters],
      arguments: [id, String(Math.max(0, Math.ceil(tokens))), String(scoreOf(opts.priority ?? 5, opts.arrivedMs)), String(tpm), String(rpm), String(maxConcurrent), String(this.leaseMs), String(this.waiterTtlMs)],
    });
    const [ok, a, b] = reply as number[];
    return ok === 1 ? { granted: true, lease: id, tokens: a } : { granted: false, waitMs: a, position: b };
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
   * `keepPlaceMs` (the run waits elsewhere and asks again with the same `id` and `arrivedMs`).
   */
  async acquire(
    id: string,
    tokens: number,
    opts: { priority?: number; arrivedMs?: number; signal?: AbortSignal; onWait?: (waitMs: number, position: number) => void; untilMs?: number; keepPlaceMs?: number } = {},
  ): Promise<Grant> {
    const arrivedMs = opts.arrivedMs ?? Date.now();
    for (;;) {
      opts.signal?.throwIfAborted();
      const g = await this.tryAcquire(id, tokens, { priority: opts.priority, arrivedMs });
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
    await this.client.sendCommand(['ZREM', this.keys.queue, id]);
    await this.client.sendCommand(['ZREM', this.keys.waiters, id]);
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
