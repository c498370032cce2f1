/** Side effects as the world saw them (the effects file) and as the worker's ledger recorded them. */
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { UNKNOWN_OUTCOME } from '../src/activities';
import type { EffectLine } from './worker';

export interface EffectFigures {
  /** Lines in the effects file: real executions of `recordEffect`. */
  effectLines: number;
  /** Idempotency keys with more than one line: must be 0. */
  effectsDoneTwice: number;
  doneTwiceKeys: string[];
  /** Completed runs with no effect line (an attempt killed before acting, then told "unknown outcome"). */
  completedRunsWithoutEffect: number;
  /** Side-effecting calls the ledger answered with "unknown outcome" instead of acting again. */
  unknownOutcomes: number;
  /** Ledger claims never finished: calls still open when the worker was stopped for good. */
  ledgerStartedNotDone: number;
}

export function effectFigures(effectsFile: string, ledgerFile: string, completedRunIds: string[]): EffectFigures {
  const lines: EffectLine[] = existsSync(effectsFile)
    ? readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as EffectLine)
    : [];
  const perKey = new Map<string, number>();
  for (const line of lines) perKey.set(line.key, (perKey.get(line.key) ?? 0) + 1);
  const doneTwiceKeys = [...perKey].filter(([, n]) => n > 1).map(([key, n]) => `${key} x${n}`);
  const runsWithEffect = new Set(lines.map((l) => l.runId));
  const ledger = readLedger(ledgerFile);
  return {
    effectLines: lines.length,
    effectsDoneTwice: doneTwiceKeys.length,
    doneTwiceKeys,
    completedRunsWithoutEffect: completedRunIds.filter((id) => !runsWithEffect.has(id)).length,
    ...ledger,
  };
}

function readLedger(file: string): Pick<EffectFigures, 'unknownOutcomes' | 'ledgerStartedNotDone'> {
  if (!existsSync(file)) return { unknownOutcomes: 0, ledgerStartedNotDone: 0 };
  const db = new Database(file, { readonly: true });
  try {
    const count = (sql: string, ...params: unknown[]) => (db.prepare(sql).get(...params) as { n: number }).n;
    return {
      unknownOutcomes: count(`SELECT COUNT(*) AS n FROM tool_calls WHERE state = 'done' AND content = ?`, UNKNOWN_OUTCOME),
      ledgerStartedNotDone: count(`SELECT COUNT(*) AS n FROM tool_calls WHERE state = 'started'`),
    };
  } finally {
    db.close();
  }
}
