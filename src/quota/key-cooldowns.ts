/** Where API-key cooldowns live (activities/providers.ts rotates keys by them): this process, or the fleet's Redis (redis-cooldowns.ts). */

/** Where the keys' cooldowns live, by a key's id (its provider and a hash of it): until when (epoch ms) each is skipped. */
export interface KeyCooldowns {
  /** Until when each key is skipped; 0 when it is not. */
  untilOf(ids: readonly string[]): Promise<number[]>;
  /** Skip the key until `until`, `ms` from now. */
  cool(id: string, until: number, ms: number): Promise<void>;
  clear(id: string): Promise<void>;
}

/** Cooldowns in this process: lost on a restart, not shared with other workers. */
export class MemoryKeyCooldowns implements KeyCooldowns {
  private readonly cooling = new Map<string, number>();
  untilOf = async (ids: readonly string[]) => ids.map((id) => this.cooling.get(id) ?? 0);
  cool = async (id: string, until: number) => void this.cooling.set(id, until);
  clear = async (id: string) => void this.cooling.delete(id);
}
