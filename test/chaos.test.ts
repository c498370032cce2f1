/**
 * The short form of the chaos harness (`npm run chaos -- --short`), through the same code: kill -9 of the
 * worker and of the server while runs are in flight. It starts its own dev server on a free port, since it
 * kills it; the global-setup server is not used. Its figures go to a temp dir: the committed
 * chaos/results/short.json is what `npm run chaos -- --short` wrote, and a test run leaves the tree as it was.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { formatReport } from '../chaos/report';
import { runChaos } from '../chaos/run';

let resultsDir: string;
beforeAll(() => {
  resultsDir = mkdtempSync(path.join(os.tmpdir(), 'agent-chaos-results-'));
});
afterAll(() => rmSync(resultsDir, { recursive: true, force: true }));

test('runs survive kill -9 of the worker and the server: right answers, nothing done twice', async () => {
  const log: string[] = [];
  const report = await runChaos({ short: true, resultsFile: path.join(resultsDir, 'short.json'), log: (line) => log.push(line) });
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
