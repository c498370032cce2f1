/** A small seeded RNG (mulberry32), so the same seed gives the same chaos schedule. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  between(min: number, max: number): number;
}

export function seededRng(seed: string | number): Rng {
  let state = hashSeed(String(seed));
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, between: (min, max) => min + Math.floor(next() * (max - min + 1)) };
}

/** FNV-1a, so any string is a seed. */
function hashSeed(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
