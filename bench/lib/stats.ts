/** Small statistics over step times. */

/** The p-th percentile (0-100) by nearest rank; NaN for no samples. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/**
 * Steps on either side of step k whose median stands for it in (b): 25 steps, as a single long run on 2 shared cores
 * moves by +-15 ms from one stretch of steps to the next.
 */
export const STEP_WINDOW_HALF = 12;

/** Median of the steps within `half` of step `k` (1-based), so one step's noise does not stand for its neighbourhood. */
export function windowMedian(times: number[], k: number, half: number): number {
  const from = Math.max(1, k - half);
  const to = Math.min(times.length, k + half);
  return percentile(times.slice(from - 1, to), 50);
}
