/** Replays the committed histories (test/histories, made by `npm run record-histories`) against today's workflow code. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { quietRuntime, workflowBundle } from './support/agent-harness';
import { streamSinks } from '../src/stream/sinks';
import { readPatches } from '../src/workflows/patches';
import { LATEST_MACHINE_VERSION, versionOfPatches } from '../src/machine/machine';

// Histories of older workflow versions stay in subfolders: runs started then must still replay.
const DIR = path.join(__dirname, 'histories');
const files = readdirSync(DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.json')).sort();

beforeAll(() => quietRuntime());

test('there are recorded histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(6);
});

/** The patch markers a recorded history holds: `patched()` answers true in its replay exactly for these. */
function markers(history: { events?: Array<{ markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, { payloads?: Array<{ data?: string }> }> } }> }): Set<string> {
  const ids = new Set<string>();
  for (const e of history.events ?? []) {
    const m = e.markerRecordedEventAttributes;
    const data = m?.markerName === 'core_patch' ? m.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    if (data) ids.add((JSON.parse(Buffer.from(data, 'base64').toString()) as { id: string }).id);
  }
  return ids;
}

/** Versions none of whose histories replay since issue 46 changed the workflow unconditionally (the 1.0 baseline removes the rest). */
const WITHOUT_HISTORY = [8];

test('every machine version is the one some recorded history replays with', () => {
  const versions = files.map((file) => {
    const recorded = markers(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));
    return versionOfPatches(readPatches((id) => recorded.has(id)));
  });
  const all = Array.from({ length: LATEST_MACHINE_VERSION }, (_, i) => i + 1);
  expect([...new Set(versions)].sort((a, b) => a - b)).toEqual(all.filter((v) => !WITHOUT_HISTORY.includes(v)));
});

test.each(files)('%s replays without nondeterminism', async (file) => {
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));
  // Under the id it was recorded with: a run's children's ids begin with it (parallel-agents).
  const workflowId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || file;
  await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle(), sinks: streamSinks(undefined) }, history, workflowId)).resolves.toBeUndefined();
}, 60_000);
