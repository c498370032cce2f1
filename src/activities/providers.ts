/**
 * The model providers a worker calls: a default one, and named ones a run reaches with a `provider/model` name, each
 * with its own base URL and one or more API keys. A key that refuses (401/403) or has spent its quota is skipped for
 * `keyCooldownMs`, so the next calls go to the others first (seed 001's auth-profile rotation). The cooldowns live in
 * the fleet's Redis when the worker has one (the quota's: quota/redis-cooldowns.ts), else in this process.
 */
import { createHash } from 'node:crypto';
import type OpenAI from 'openai';
import { MemoryKeyCooldowns, type KeyCooldowns } from '../quota/key-cooldowns';
import { ModelErrorType } from '../common/failures';

/** One provider as the worker is configured with it (`LLM_PROVIDERS`, `createAgentWorker({ providers })`). */
export interface ProviderConfig {
  baseURL: string;
  /** Tried in order; a key that fails for auth or billing is skipped for a while. Local servers need none. */
  apiKeys?: string[];
}

/** One key of one provider, with the client that sends it. */
export interface ProviderKey {
  provider: string;
  index: number;
  client: OpenAI;
}

/** Where a model name leads: the provider's model name and the keys to try, in order. */
export interface Route {
  provider: string;
  model: string;
  keys: ProviderKey[];
}

/** The default provider's name in logs and messages. */
export const DEFAULT_PROVIDER = 'default';

/** Failures another key of the same provider may not have: the key's own, or its account's. */
export const KEY_FAILURES: readonly string[] = [ModelErrorType.Authentication, ModelErrorType.PermissionDenied, ModelErrorType.QuotaExceeded];

/** A key's name in the cooldowns: the provider and a hash of the API key (the same key on every worker, whatever its place). */
const cooldownId = (k: ProviderKey) => `${k.provider}#${k.client.apiKey ? createHash('sha256').update(k.client.apiKey).digest('hex').slice(0, 16) : k.index}`;

export type { KeyCooldowns };

export class Providers {
  private readonly keys = new Map<string, ProviderKey[]>();
  /** This process's cooldowns, which also stand in while the shared ones cannot be read. */
  private readonly local = new MemoryKeyCooldowns();

  /**
   * @param byName the default provider's clients under `default`, and every named provider's.
   * @param keyCooldownMs how long a key that failed is tried only after the others. @default 300000
   * @param cooldowns where the cooldowns live. @default this process
   */
  constructor(
    byName: Record<string, OpenAI[]>,
    private readonly keyCooldownMs = 300_000,
    private readonly clock: () => number = Date.now,
    private readonly cooldowns: KeyCooldowns = new MemoryKeyCooldowns(),
  ) {
    for (const [provider, clients] of Object.entries(byName)) this.keys.set(provider, clients.map((client, index) => ({ provider, index, client })));
    if (!this.keys.get(DEFAULT_PROVIDER)?.length) throw new Error('providers: the default provider needs a client');
  }

  /** Clients from configs: one client per key (or one without a key). */
  static fromConfig(
    client: (config: { baseURL: string; apiKey?: string }) => OpenAI,
    defaultProvider: ProviderConfig,
    named: Record<string, ProviderConfig> = {},
    keyCooldownMs?: number,
    cooldowns?: KeyCooldowns,
  ): Providers {
    const clients = (c: ProviderConfig) => (c.apiKeys?.length ? c.apiKeys.map((apiKey) => client({ baseURL: c.baseURL, apiKey })) : [client({ baseURL: c.baseURL })]);
    const byName: Record<string, OpenAI[]> = { [DEFAULT_PROVIDER]: clients(defaultProvider) };
    for (const [name, config] of Object.entries(named)) byName[name] = clients(config);
    return new Providers(byName, keyCooldownMs, Date.now, cooldowns);
  }

  /** `provider/model` for a configured provider; any other name (slashes and all) goes to the default provider. */
  async route(model: string): Promise<Route> {
    const slash = model.indexOf('/');
    const prefix = slash > 0 ? model.slice(0, slash) : '';
    const provider = prefix && prefix !== DEFAULT_PROVIDER && this.keys.has(prefix) ? prefix : DEFAULT_PROVIDER;
    const name = provider === DEFAULT_PROVIDER ? model : model.slice(slash + 1);
    const all = this.keys.get(provider)!;
    const now = this.clock();
    if (all.length === 1) return { provider, model: name, keys: all }; // nothing to rotate to: no lookup
    const ids = all.map(cooldownId);
    const shared = await this.cooldowns.untilOf(ids).catch(() => this.local.untilOf(ids));
    const untilOf = new Map(all.map((k, i) => [k, shared[i] ?? 0]));
    const until = (k: ProviderKey) => untilOf.get(k) ?? 0;
    const ready = all.filter((k) => until(k) <= now);
    // Keys cooling down still come, after the others, the one that failed longest ago first: it may have been mended.
    const cooling = all.filter((k) => until(k) > now).sort((a, b) => until(a) - until(b));
    return { provider, model: name, keys: [...ready, ...cooling] };
  }

  /** Skip this key for a while (best effort: a store that cannot be written keeps it in this process). */
  async failed(key: ProviderKey): Promise<void> {
    const id = cooldownId(key);
    const until = this.clock() + this.keyCooldownMs;
    await this.local.cool(id, until);
    await this.cooldowns.cool(id, until, this.keyCooldownMs).catch(() => undefined);
  }

  /** The key answered: it is no longer skipped. */
  async succeeded(key: ProviderKey): Promise<void> {
    if (this.keys.get(key.provider)!.length === 1) return;
    const id = cooldownId(key);
    await this.local.clear(id);
    await this.cooldowns.clear(id).catch(() => undefined);
  }

  /** Every key, for keeping them out of error messages. */
  secrets(): Array<string | null> {
    return [...this.keys.values()].flat().map((k) => k.client.apiKey);
  }
}

/** Where a model name leads: through `providers` when the worker has them, else to its one client. */
export const routeOf = async (deps: { openai: OpenAI; providers?: Providers }, model: string): Promise<Route> =>
  (await deps.providers?.route(model)) ?? { provider: DEFAULT_PROVIDER, model, keys: [{ provider: DEFAULT_PROVIDER, index: 0, client: deps.openai }] };

/** The keys to keep out of error messages. */
export const secretsOf = (deps: { openai: OpenAI; providers?: Providers }): Array<string | null> => deps.providers?.secrets() ?? [deps.openai.apiKey];
