/**
 * Replays the committed histories (test/histories, made by `npm run record-histories`) against today's workflow code.
 * The 1.0 histories are the baseline: every later release must replay them (docs/deployment.md, "Versioning").
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { quietRuntime, workflowBundle } from './support/agent-harness';
import { streamSinks } from '../src/stream/sinks';

const DIR = path.join(__dirname, 'histories');
const files = readdirSync(DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.json')).sort();

/** The patch ids src/workflows/definition.ts reads with `patched()`: none while 1.0 is the only definition. */
const DEFINITION_PATCHES: readonly string[] = [];

beforeAll(() => quietRuntime());

test('there are recorded histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(6);
});

/** The patch markers a recorded history holds: `patched()` answers true in its replay exactly for these. */
function markers(history: { events?: Array<{ markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, { payloads?: Array<{ data?: string }> }> } }> }): string[] {
  const ids: string[] = [];
  for (const e of history.events ?? []) {
    const m = e.markerRecordedEventAttributes;
    const data = m?.markerName === 'core_patch' ? m.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    if (data) ids.push((JSON.parse(Buffer.from(data, 'base64').toString()) as { id: string }).id);
  }
  return ids;
}

test('the histories carry no patch marker but those definition.ts reads', () => {
  const unknown = files.flatMap((file) => markers(JSON.parse(readFileSync(path.join(DIR, file), 'utf8'))).filter((id) => !DEFINITION_PATCHES.includes(id)).map((id) => `${file}: ${id}`));
  expect(unknown).toEqual([]);
});

test('only definition.ts calls patched()', () => {
  const src = path.join(__dirname, '..', 'src');
  const callers = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && /\b(patched|deprecatePatch)\(/.test(readFileSync(path.join(src, f), 'utf8')))
    .map((f) => f.split(path.sep).join('/'));
  expect(callers.filter((f) => f !== 'workflows/definition.ts')).toEqual([]);
});

test.each(files)('%s replays without nondeterminism', async (file) => {
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(DIR, file), 'utf8')));
  // Under the id it was recorded with: a run's children's ids begin with it.
  const workflowId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || file;
  await expect(Worker.runReplayHistory({ workflowBundle: await workflowBundle(), sinks: streamSinks(undefined) }, history, workflowId)).resolves.toBeUndefined();
}, 60_000);
