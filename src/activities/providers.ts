/**
 * The model providers a worker calls: a default one, and named ones a run reaches with a `provider/model` name, each
 * with its own base URL and one or more API keys. A key that refuses (401/403) or has spent its quota is skipped for
 * `keyCooldownMs`, so the next calls go to the others first (seed 001's auth-profile rotation).
 */
import type OpenAI from 'openai';
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

export class Providers {
  private readonly keys = new Map<string, ProviderKey[]>();
  /** Until when (epoch ms) a key is skipped, by `provider#index`. */
  private readonly cooling = new Map<string, number>();

  /**
   * @param byName the default provider's clients under `default`, and every named provider's.
   * @param keyCooldownMs how long a key that failed is tried only after the others. @default 300000
   */
  constructor(
    byName: Record<string, OpenAI[]>,
    private readonly keyCooldownMs = 300_000,
    private readonly clock: () => number = Date.now,
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
  ): Providers {
    const clients = (c: ProviderConfig) => (c.apiKeys?.length ? c.apiKeys.map((apiKey) => client({ baseURL: c.baseURL, apiKey })) : [client({ baseURL: c.baseURL })]);
    const byName: Record<string, OpenAI[]> = { [DEFAULT_PROVIDER]: clients(defaultProvider) };
    for (const [name, config] of Object.entries(named)) byName[name] = clients(config);
    return new Providers(byName, keyCooldownMs);
  }

  /** `provider/model` for a configured provider; any other name (slashes and all) goes to the default provider. */
  route(model: string): Route {
    const slash = model.indexOf('/');
    const prefix = slash > 0 ? model.slice(0, slash) : '';
    const provider = prefix && prefix !== DEFAULT_PROVIDER && this.keys.has(prefix) ? prefix : DEFAULT_PROVIDER;
    const name = provider === DEFAULT_PROVIDER ? model : model.slice(slash + 1);
    const all = this.keys.get(provider)!;
    const now = this.clock();
    const until = (k: ProviderKey) => this.cooling.get(`${k.provider}#${k.index}`) ?? 0;
    const ready = all.filter((k) => until(k) <= now);
    // Keys cooling down still come, after the others, the one that failed longest ago first: it may have been mended.
    const cooling = all.filter((k) => until(k) > now).sort((a, b) => until(a) - until(b));
    return { provider, model: name, keys: [...ready, ...cooling] };
  }

  /** Skip this key for a while. */
  failed(key: ProviderKey): void {
    this.cooling.set(`${key.provider}#${key.index}`, this.clock() + this.keyCooldownMs);
  }

  /** The key answered: it is no longer skipped. */
  succeeded(key: ProviderKey): void {
    this.cooling.delete(`${key.provider}#${key.index}`);
  }

  /** Every key, for keeping them out of error messages. */
  secrets(): Array<string | null> {
    return [...this.keys.values()].flat().map((k) => k.client.apiKey);
  }
}

/** Where a model name leads: through `providers` when the worker has them, else to its one client. */
export const routeOf = (deps: { openai: OpenAI; providers?: Providers }, model: string): Route =>
  deps.providers?.route(model) ?? { provider: DEFAULT_PROVIDER, model, keys: [{ provider: DEFAULT_PROVIDER, index: 0, client: deps.openai }] };

/** The keys to keep out of error messages. */
export const secretsOf = (deps: { openai: OpenAI; providers?: Providers }): Array<string | null> => deps.providers?.secrets() ?? [deps.openai.apiKey];
