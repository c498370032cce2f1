/** Replays the committed histories (test/histories, made by `npm run record-histories`) against today's workflow code. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { quietRuntime, workflowBundle } from './support/agent-harness';
import { streamSinks } from '../src/stream/sinks';

// Histories of older workflow versions stay in subfolders: runs started then must still replay.
const DIR = path.join(__dirname, 'histories');
const files = readdirSync(DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.json')).sort();

beforeAll(() => quietRuntime());

test('there are recorded histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(6);
});

test.each(files)('%s replays without nondeterminism', async (file) => {
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));
  // Under the id it was recorded with: a run's children's ids begin with it (parallel-agents).
  const workflowId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || file;
  await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle(), sinks: streamSinks(undefined) }, history, workflowId)).resolves.toBeUndefined();
}, 60_000);
