/** Options of the chaos harness and their two presets: the full form and the short form that CI runs. */

export interface ChaosOptions {
  /** Agent runs to complete. */
  runs: number;
  /** Runs in flight at once; the rest wait for a free slot. */
  concurrency: number;
  /** Chaos and waiting stop after this long; unfinished runs count as lost or stuck. */
  durationLimitS: number;
  /** Seeds the chaos schedule and the run tokens. */
  seed: string;
  short: boolean;
  /** A worker is killed this long (uniform, ms) after it starts polling. */
  killGapMs: [number, number];
  /** The chaos stops after this many events (worker kills and server restarts), so the last runs can finish. */
  maxChaosEvents: number;
  /** Chaos events (0-based) that restart the server instead of killing the worker. */
  serverRestartAt: number[];
  /** The server stays down this long (uniform, ms) before it is started again. */
  serverDownMs: [number, number];
  /** Less chaos than this fails the run: the figures would prove too little. */
  minimum: { workerKills: number; serverRestarts: number };
  /** Where the figures are written as JSON. */
  resultsFile: string;
  /** Keep the temp dir (db, logs, ledger, effects) even when every figure passes. */
  keepDir: boolean;
  log: (line: string) => void;
}

const FULL = {
  runs: 200,
  // Few enough that the runs outlast twenty-odd kills, many enough to keep the worker busy.
  concurrency: 10,
  durationLimitS: 1_800,
  // As dense as the short form: a kill costs an in-flight model call an attempt and its 5 s heartbeat timeout, and
  // model calls are bounded by time (20 minutes), not by an attempt count that kills could spend (chaos/README.md).
  killGapMs: [1_000, 5_000] as [number, number],
  maxChaosEvents: Infinity,
  serverRestartAt: [6, 18],
  minimum: { workerKills: 20, serverRestarts: 1 },
  resultsFile: 'chaos/results/latest.json',
};
const SHORT = {
  runs: 12,
  concurrency: 12,
  durationLimitS: 240,
  // Six events, one a server restart that the worker survives: enough to prove recovery in CI's time.
  killGapMs: [1_000, 5_000] as [number, number],
  maxChaosEvents: 6,
  serverRestartAt: [2],
  minimum: { workerKills: 3, serverRestarts: 1 },
  resultsFile: 'chaos/results/short.json',
};

export function chaosOptions(overrides: Partial<ChaosOptions> = {}): ChaosOptions {
  const preset = overrides.short ? SHORT : FULL;
  return {
    ...preset,
    seed: 'chaos-1',
    short: false,
    serverDownMs: [1_000, 3_000],
    keepDir: false,
    log: (line) => console.log(line),
    ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)),
  };
}

const USAGE = 'usage: npm run chaos -- [--runs N] [--concurrency C] [--duration-limit S] [--seed X] [--short] [--kill-gap MIN-MAX] [--keep]';

/** Parses the command line of `npm run chaos`. */
export function parseChaosArgs(argv: string[]): ChaosOptions {
  const overrides: Partial<ChaosOptions> = {};
  const number = (flag: string, value: string | undefined): number => {
    const n = Number(value);
    if (!value || !Number.isInteger(n) || n <= 0) throw new Error(`${flag} needs a positive integer\n${USAGE}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--short') overrides.short = true;
    else if (flag === '--keep') overrides.keepDir = true;
    else if (flag === '--runs') overrides.runs = number(flag, argv[++i]);
    else if (flag === '--concurrency') overrides.concurrency = number(flag, argv[++i]);
    else if (flag === '--duration-limit') overrides.durationLimitS = number(flag, argv[++i]);
    else if (flag === '--seed' && argv[i + 1]) overrides.seed = argv[++i];
    else if (flag === '--kill-gap') overrides.killGapMs = gapMs(argv[++i]);
    else throw new Error(`unknown or incomplete option ${flag}\n${USAGE}`);
  }
  return chaosOptions(overrides);
}

/** `MIN-MAX` in seconds, e.g. `1-5`. */
function gapMs(value: string | undefined): [number, number] {
  const match = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(value ?? '');
  if (!match || Number(match[1]) > Number(match[2])) throw new Error(`--kill-gap needs MIN-MAX in seconds, e.g. 1-5\n${USAGE}`);
  return [Number(match[1]) * 1000, Number(match[2]) * 1000];
}
