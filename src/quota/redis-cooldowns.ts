/**
 * API-key cooldowns in the fleet's Redis (the quota's, `AGENT_QUOTA_REDIS_URL`): a key one worker found refused is
 * skipped by every worker, and still after a restart, until its cooldown ends (seed 001, §4.4). Each cooldown is one
 * Redis key that expires with it, named by the provider and a hash of the API key, never the key itself.
 */
import { createClient } from '@redis/client';
import type { KeyCooldowns } from './key-cooldowns';

const newClient = (url: string) => createClient({ url, RESP: 2, socket: { connectTimeout: 2_000 } });

export class RedisKeyCooldowns implements KeyCooldowns {
  private constructor(
    private readonly client: ReturnType<typeof newClient>,
    private readonly prefix: string,
  ) {}

  /** @param prefix what every cooldown's Redis key begins with. @default 'agent:key-cooldown:' */
  static async connect(opts: { url: string; prefix?: string }): Promise<RedisKeyCooldowns> {
    const client = newClient(opts.url);
    client.on('error', () => undefined); // reconnects on its own; a call that fails meanwhile is told
    await client.connect();
    return new RedisKeyCooldowns(client, opts.prefix ?? 'agent:key-cooldown:');
  }

  async untilOf(ids: readonly string[]): Promise<number[]> {
    if (ids.length === 0) return [];
    const values = await this.client.mGet(ids.map((id) => this.prefix + id));
    return values.map((v) => Number(v ?? 0));
  }

  async cool(id: string, until: number, ms: number): Promise<void> {
    await this.client.set(this.prefix + id, String(until), { PX: Math.max(1, ms) });
  }

  async clear(id: string): Promise<void> {
    await this.client.del(this.prefix + id);
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
