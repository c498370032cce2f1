/**
 * Retention of the blob store and the tool ledger: what no run can read any more is deleted.
 *
 * Blobs are keyed by content, not by run: a claim-checked payload stored twice (a repeated input) is one blob, and a
 * pack holds the conversation nodes of every run its process served. So the sweep is a mark and sweep: every run that
 * can still be read (open, or closed within the retention period) has its history read, every payload in it decoded
 * stage by stage (the claim check reads its blob, encryption decrypts), and every blob key and pack the decoded bytes
 * name is marked. Blobs and packs left unmarked and untouched for `graceMs` (a blob written but not yet in a history:
 * a start being sent, an activity about to complete) are deleted. Ledger rows are kept while their run (the workflow
 * id their key begins with) can be read, and for `graceMs` after they were written.
 */
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { BlobNotFoundError, type FsBlobStore, type SweepResult } from './blob-store';
import { backgroundTaskQueue } from '../common/fairness';

/** The part of a Temporal connection the sweep uses (a `Client`'s, a `Connection`'s, a `NativeConnection`'s). */
export interface RetentionService {
  workflowService: Pick<temporal.api.workflowservice.v1.WorkflowService, 'listWorkflowExecutions' | 'getWorkflowExecutionHistory' | 'describeNamespace'>;
}

/** A ledger the sweep prunes (`SqliteToolLedger`). */
export interface PrunableLedger {
  /** Rows written before `before` (epoch ms) whose key `keep` does not keep: deleted, unless `dryRun`; their keys. */
  prune(before: number, keep: (key: string) => boolean, dryRun: boolean): string[];
}

/** A blob written within this long is kept though no history names it yet (it may be about to). @default 24 hours */
export const DEFAULT_RETENTION_GRACE_MS = 24 * 3600_000;

export interface PruneOptions {
  connection: RetentionService;
  namespace: string;
  /**
   * Only runs of this task queue and of its background queue (`backgroundTaskQueue`) are read: the fleet that writes
   * this store. Runs of other fleets in the namespace (with keys or stores of their own, which this sweep could not
   * read) neither keep nor block its pruning.
   * @default every run of the namespace
   */
  taskQueue?: string;
  /** The data converter's codecs, in its order (encode first to last): the sweep decodes history's payloads with them. */
  payloadCodecs: readonly PayloadCodec[];
  /** Absent when the claim check is off (no blobs): only the ledger is pruned. */
  store?: FsBlobStore;
  ledger?: PrunableLedger;
  /** Runs closed longer ago than this are no longer read. @default the namespace's retention (`describeNamespace`) */
  retentionMs?: number;
  /** @default DEFAULT_RETENTION_GRACE_MS */
  graceMs?: number;
  /** List what would be deleted; delete nothing. */
  dryRun?: boolean;
  /** @default Date.now */
  now?: () => number;
}

export interface PruneReport {
  retentionMs: number;
  /** Runs whose histories were read (open, or closed within retention). */
  runsRead: number;
  blobs: SweepResult;
  /** Ledger rows deleted (or, with `dryRun`, that would be). */
  ledgerRows: string[];
  dryRun: boolean;
}

const ProtoPayload = temporal.api.common.v1.Payload;
const KEY = /[0-9a-f]{64}/g;
/** A conversation reference as JSON writes it (`ConversationRef`): the node, and where its pack holds it. */
const NODE = /\{"ref":"([0-9a-f]{64})","count":\d+(?:,"at":"(packs\/[A-Za-z0-9._-]+\.pack@\d+\+\d+)")?\}/g;
const PACK = /packs\/([A-Za-z0-9._-]+\.pack)@/g;
const utf8 = new TextDecoder();

/** What a sweep keeps: blob keys and pack files named by a readable run, and the runs' workflow ids. */
export interface LiveSet {
  keys: Set<string>;
  packs: Set<string>;
  workflowIds: Set<string>;
  /** Conversation nodes named, to be read in turn: a node names its base, and a large one is itself claim-checked. */
  nodes: Map<string, string | undefined>;
}

/** The namespace's retention period: how long the server keeps a closed run's history. */
export async function namespaceRetentionMs(connection: RetentionService, namespace: string): Promise<number> {
  const { config } = await connection.workflowService.describeNamespace({ namespace });
  const ttl = config?.workflowExecutionRetentionTtl;
  if (!ttl) throw new Error(`namespace ${namespace} reports no retention period: set AGENT_RETENTION`);
  return Number(ttl.seconds ?? 0) * 1000 + Math.floor((ttl.nanos ?? 0) / 1e6);
}

/** Deletes the blobs, packs and ledger rows no open run, and no run closed within retention, can read (or lists them). */
export async function pruneStore(options: PruneOptions): Promise<PruneReport> {
  const now = (options.now ?? Date.now)();
  const retentionMs = options.retentionMs ?? (await namespaceRetentionMs(options.connection, options.namespace));
  const graceMs = options.graceMs ?? DEFAULT_RETENTION_GRACE_MS;
  const dryRun = options.dryRun ?? false;
  const live = await markLive(options, now - retentionMs);
  const before = now - graceMs;
  const blobs = options.store ? await options.store.sweep(live, { before, dryRun }) : { deleted: [], deletedBytes: 0, kept: 0 };
  const ledgerRows = options.ledger?.prune(before, (key) => namesLiveRun(key, live.workflowIds), dryRun) ?? [];
  return { retentionMs, runsRead: live.workflowIds.size, blobs, ledgerRows, dryRun };
}

/** Whether a ledger key (`<workflowId>/<call>/<id>`, a workflow id may hold `/`) begins with a readable run's id. */
function namesLiveRun(key: string, workflowIds: Set<string>): boolean {
  for (let i = key.indexOf('/'); i > 0; i = key.indexOf('/', i + 1)) if (workflowIds.has(key.slice(0, i))) return true;
  return workflowIds.has(key);
}

/** Reads every readable run's history and marks what its payloads name. */
export async function markLive(options: Pick<PruneOptions, 'connection' | 'namespace' | 'taskQueue' | 'payloadCodecs' | 'store'>, closedAfter: number): Promise<LiveSet> {
  const live: LiveSet = { keys: new Set(), packs: new Set(), workflowIds: new Set(), nodes: new Map() };
  const runs = new Map<string, { workflowId: string; runId: string }>();
  // Two lists, not one query with OR: every visibility store answers these.
  const fleet = options.taskQueue !== undefined ? [options.taskQueue, backgroundTaskQueue(options.taskQueue)].map((q) => ` AND TaskQueue = ${JSON.stringify(q)}`) : [''];
  for (const query of ['ExecutionStatus = "Running"', `CloseTime > "${new Date(closedAfter).toISOString()}"`]) {
    for (const queue of fleet) for await (const run of listRuns(options, query + queue)) runs.set(`${run.workflowId}/${run.runId}`, run);
  }
  for (const run of runs.values()) {
    live.workflowIds.add(run.workflowId);
    for await (const payload of historyPayloads(options, run)) await markPayload(payload, options.payloadCodecs, live, run.workflowId);
  }
  // The conversation nodes the histories name, then the nodes those name, each read once.
  const read = new Set<string>();
  for (let pending = [...live.nodes]; pending.length > 0; pending = [...live.nodes].filter(([ref]) => !read.has(ref))) {
    for (const [ref, at] of pending) {
      read.add(ref);
      const bytes = await options.store?.get(ref, at).catch(() => undefined);
      // Gone or torn: a run that needs it sends its whole conversation instead.
      if (!bytes?.length) continue;
      let payload: Payload;
      try {
        payload = ProtoPayload.decode(bytes);
      } catch {
        continue;
      }
      await markPayload(payload, options.payloadCodecs, live, `(conversation ${ref})`);
    }
  }
  return live;
}

async function* listRuns({ connection, namespace }: Pick<PruneOptions, 'connection' | 'namespace'>, query: string) {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await connection.workflowService.listWorkflowExecutions({ namespace, query, pageSize: 1000, nextPageToken });
    for (const e of page.executions ?? []) if (e.execution?.workflowId && e.execution.runId) yield { workflowId: e.execution.workflowId, runId: e.execution.runId };
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

async function* historyPayloads({ connection, namespace }: Pick<PruneOptions, 'connection' | 'namespace'>, execution: { workflowId: string; runId: string }) {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await connection.workflowService.getWorkflowExecutionHistory({ namespace, execution, nextPageToken, maximumPageSize: 1000 });
    for (const event of page.history?.events ?? []) yield* payloadsIn(event);
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}

/** Every payload in a history event, wherever it sits (inputs, results, failures, memo, headers, metadata). */
function* payloadsIn(value: unknown): Generator<Payload> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && record.metadata && typeof record.metadata === 'object') {
    yield record as Payload;
    return;
  }
  for (const child of Array.isArray(value) ? value : Object.values(record)) yield* payloadsIn(child);
}

/** Marks what a payload names at each stage of decoding it: the claim check's key, then what its blob holds, and so on. */
async function markPayload(payload: Payload, codecs: readonly PayloadCodec[], live: LiveSet, workflowId: string): Promise<void> {
  let current = payload;
  mark(current, live);
  for (const codec of [...codecs].reverse()) {
    try {
      [current] = await codec.decode([current]);
    } catch (err) {
      // Gone already: nothing more to mark from it. Anything else (a key this process lacks) stops the sweep.
      if (err instanceof BlobNotFoundError) return;
      throw new Error(`cannot read a payload of run ${workflowId} to see what it names, so nothing is deleted: ${(err as Error).message}`, { cause: err });
    }
    mark(current, live);
  }
}

function mark(payload: Payload, live: LiveSet): void {
  if (!payload.data?.length) return;
  const text = utf8.decode(payload.data);
  for (const [key] of text.matchAll(KEY)) live.keys.add(key);
  for (const [, pack] of text.matchAll(PACK)) live.packs.add(pack);
  for (const [, ref, at] of text.matchAll(NODE)) if (!live.nodes.has(ref) || at) live.nodes.set(ref, at);
}

/** Options of `startRetentionSweeps`: `pruneStore`'s, and how often. */
export interface RetentionSweepOptions extends Omit<PruneOptions, 'dryRun' | 'now'> {
  intervalMs: number;
  /** A file every worker of the fleet sees (in the blob store's folder): the workers sharing it sweep once an interval between them. */
  markerFile: string;
  log: { info(message: string, meta?: Record<string, unknown>): void; warn(message: string, meta?: Record<string, unknown>): void };
}

/**
 * The worker's background sweep: at a random moment of the first interval (workers that start together do not sweep
 * together), then once an interval; skipped when another worker sharing the marker file swept within it. Returns the
 * function that stops it.
 */
export function startRetentionSweeps(options: RetentionSweepOptions): () => void {
  const { intervalMs, markerFile, log, ...prune } = options;
  let stopped = false;
  const sweep = async () => {
    const last = await stat(markerFile).then((s) => s.mtimeMs, () => 0);
    if (Date.now() - last < intervalMs * 0.9) return;
    await mkdir(path.dirname(markerFile), { recursive: true });
    await writeFile(markerFile, new Date().toISOString());
    const report = await pruneStore(prune);
    log.info('retention sweep', { runsRead: report.runsRead, blobsDeleted: report.blobs.deleted.length, bytesDeleted: report.blobs.deletedBytes, blobsKept: report.blobs.kept, ledgerRowsDeleted: report.ledgerRows.length });
  };
  let timer: NodeJS.Timeout = setTimeout(function tick() {
    sweep()
      .catch((err: unknown) => log.warn(`retention sweep failed: ${(err as Error).message}`))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs).unref();
      });
  }, Math.floor(Math.random() * intervalMs)).unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
