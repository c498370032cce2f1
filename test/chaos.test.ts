/**
 * The short form of the chaos harness (`npm run chaos -- --short`), through the same code: kill -9 of the
 * worker and of the server while runs are in flight. It starts its own dev server on a free port, since it
 * kills it; the global-setup server is not used.
 */
import { formatReport } from '../chaos/report';
import { runChaos } from '../chaos/run';

test('runs survive kill -9 of the worker and the server: right answers, nothing done twice', async () => {
  const log: string[] = [];
  const report = await runChaos({ short: true, log: (line) => log.push(line) });
  console.log(`${formatReport(report)}${report.pass ? '' : `\n--- harness log ---\n${log.join('\n')}`}`);

  expect({
    completedCorrect: report.completedCorrect,
    failed: report.failed,
    lostOrStuck: report.lostOrStuck,
    resentBeyondInFlight: report.resends.unexplained,
    effectsDoneTwice: report.effects.doneTwiceKeys,
    nondeterminism: report.histories.nondeterminismRuns,
  }).toEqual({ completedCorrect: report.runs, failed: [], lostOrStuck: [], resentBeyondInFlight: [], effectsDoneTwice: [], nondeterminism: [] });
  expect(report.runs).toBe(12);
  expect(report.workerKills).toBeGreaterThanOrEqual(3);
  expect(report.serverRestarts).toBeGreaterThanOrEqual(1);
  expect(report.pass).toBe(true);
}, 300_000);
