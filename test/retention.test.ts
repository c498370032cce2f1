/**
 * Retention on the real server: the blob store (claim-checked payloads, conversation packs) and the tool ledger are
 * pruned of what no readable run names, an open run waiting for a person days long keeps what it reads, the store stays
 * bounded across many closed runs, and `agent gc --dry-run` lists without deleting.
 */
import { readdirSync, statSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteToolLedger } from '../src/activities';
import { runCli } from '../src/cli/cli';
import { AgentClient } from '../src/client';
import { FsBlobStore, pruneStore, type PruneOptions } from '../src/codec';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const DAY = 24 * 3600_000;
/** 150 closed runs here (about 30 s); RETENTION_RUNS=1000 runs the thousand in rounds of 250 (about 3.5 minutes). */
const TOTAL_RUNS = Number(process.env.RETENTION_RUNS ?? 150);
const RUNS_PER_ROUND = Math.min(250, Math.ceil(TOTAL_RUNS / 3));
const ROUNDS = Math.ceil(TOTAL_RUNS / RUNS_PER_ROUND);

let h: AgentHarness;
let agents: AgentClient;
let ledger: SqliteToolLedger;
let ledgerFile: string;

beforeAll(async () => {
  ledgerFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'agent-ledger-')), 'ledger.sqlite');
  ledger = new SqliteToolLedger(ledgerFile);
  // Payloads above 512 bytes go to the blob store, and every chained call reads its conversation back from it.
  h = await startAgentHarness({ 'notes.txt': 'notes' }, { claimCheckThresholdBytes: 512, conversationCache: 0, ledger });
  agents = new AgentClient(h.env.client, h.taskQueue);
  // Writes a file (a side effect: a ledger row), then answers.
  h.model.register('writer', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool')
      ? { text: 'written' }
      : { toolCalls: [{ name: 'writeFile', arguments: { path: `out-${request.messages.length}.txt`, content: 'x'.repeat(600) } }] },
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
  ledger?.close();
});

/** The files of the blob store: blobs, packs, left-overs. */
function storeFiles(dir = h.blobDir): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.startsWith('.retention'))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => statSync(f).isFile());
}

const prune = (options: Partial<PruneOptions> = {}) =>
  pruneStore({
    connection: h.env.client,
    namespace: h.env.client.options.namespace,
    payloadCodecs: h.env.client.options.loadedDataConverter.payloadCodecs,
    store: new FsBlobStore(h.blobDir),
    ledger,
    ...options,
  });

/** Short runs that write a file and answer, `count` at once; each leaves blobs and a ledger row behind. */
async function closedRuns(count: number, tag: string): Promise<void> {
  const runs = await Promise.all(
    Array.from({ length: count }, (_, i) => agents.start({ prompt: `write a file (${tag} ${i}) ${'please '.repeat(80)}`, model: 'writer', limits: { maxLoops: 3 } })),
  );
  for (const run of runs) expect(await run.result()).toMatchObject({ status: 'COMPLETED', answer: 'written' });
}

test('an open run waiting days for approval keeps what it reads across a prune, and finishes from it', async () => {
  await closedRuns(20, 'before');
  const open = await agents.start({ prompt: `write a file, with approval ${'please '.repeat(80)}`, model: 'writer', approval: { tools: ['writeFile'] }, limits: { approvalTimeoutMs: 30 * DAY } });
  const waiting = await h.waitForState(await h.env.client.workflow.getHandle(open.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  expect(waiting.pendingApproval).toHaveLength(1);
  const before = storeFiles().length;

  // Three days on, with a one-day retention and the default grace: the closed runs are past it, the open one is not.
  const report = await prune({ retentionMs: DAY, now: () => Date.now() + 3 * DAY });
  expect(report.runsRead).toBe(1);
  expect(report.blobs.deleted.length).toBeGreaterThan(20);
  expect(report.ledgerRows).toHaveLength(20);
  expect(storeFiles().length).toBe(before - report.blobs.deleted.length);
  expect(ledger.count()).toBe(0);

  // The open run's input (claim-checked), its pending call and its conversation are still there: it finishes from them.
  await open.approve({ toolCallId: waiting.pendingApproval[0].toolCallId, approved: true });
  expect(await open.result()).toMatchObject({ status: 'COMPLETED', answer: 'written' });
  const steps = await open.steps();
  expect(steps.map((s) => s.event)).not.toContain('CHAIN_UNAVAILABLE');
  expect(ledger.count()).toBe(1);
}, 60_000);

test(`the store stays bounded across ${ROUNDS * RUNS_PER_ROUND} closed runs`, async () => {
  const after: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await closedRuns(RUNS_PER_ROUND, `round ${round}`);
    const grown = storeFiles().length;
    expect(grown).toBeGreaterThan(RUNS_PER_ROUND);
    expect(ledger.count()).toBeGreaterThanOrEqual(RUNS_PER_ROUND);
    await prune({ retentionMs: 0, graceMs: 0 });
    after.push(storeFiles().length);
    expect(ledger.count()).toBe(0);
  }
  console.log(`blob store files after each prune of ${RUNS_PER_ROUND} closed runs: ${after.join(', ')}`);
  // Nothing closed is readable and nothing waits: at most the pack the worker writes into now (recreated by the next run).
  for (const n of after) expect(n).toBeLessThanOrEqual(1);
}, 60_000 + TOTAL_RUNS * 300);

test('agent gc --dry-run lists what it would delete and deletes nothing; agent gc deletes it', async () => {
  await closedRuns(5, 'gc');
  const files = storeFiles().sort();
  const rows = ledger.count();
  let out = '';
  const gc = (...flags: string[]) => {
    out = '';
    return runCli(['gc', '--retention', '0', '--grace', '0', '--blob-dir', h.blobDir, '--ledger', ledgerFile, ...flags], {
      connect: async () => new AgentClient(h.env.client, h.taskQueue),
      out: (t) => (out += t),
      err: (t) => (out += t),
    });
  };
  expect(await gc('--dry-run')).toBe(0);
  const listed = out.split('\n').filter((l) => l.startsWith('would delete blob '));
  expect(listed.length).toBeGreaterThanOrEqual(5);
  expect(out.split('\n').filter((l) => l.startsWith('would delete ledger row '))).toHaveLength(rows);
  expect(out).toMatch(/^dry run: /m);
  expect(storeFiles().sort()).toEqual(files);
  expect(ledger.count()).toBe(rows);

  expect(await gc()).toBe(0);
  expect(out.split('\n').filter((l) => l.startsWith('deleted blob ')).length).toBe(listed.length);
  expect(storeFiles().length).toBeLessThanOrEqual(files.length - listed.length);
  expect(ledger.count()).toBe(0);
}, 60_000);
