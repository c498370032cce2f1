/**
 * The activities a worker process has in flight, written down on its host (a table in the tool ledger's SQLite file)
 * so that the next worker process there hands back at once the ones a crash left behind. Without it the server retries
 * an activity whose worker died only when its heartbeat times out (a model call: 5 s; a tool: 30 s), and an activity
 * that does not heartbeat only at its start-to-close timeout.
 *
 * A row names its owner: host name, pid and the process's start time (from /proc), so a later process with the same
 * pid (pid 1 in a restarted container) is not taken for the dead one. At start a worker fails, through the server,
 * each activity whose owner on this host is no longer running, as a retryable `WorkerCrashed` failure with no retry
 * delay: the server schedules the next attempt at once, on whichever worker polls first. Rows of other hosts and of
 * live processes are left alone. The retry counts as an attempt, as a heartbeat timeout would.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { ActivityInterceptorsFactory, NativeConnection, WorkerInterceptors } from '@temporalio/worker';
import type Database from 'better-sqlite3';
import { FailureType } from '../common/failures';
import { msToDuration } from '../common/proto-time';
import { openLedgerFile } from './tools/ledger';

/** A process as the journal names it: `host/pid/start`. */
export interface ProcessId {
  host: string;
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/PID/stat field 22); absent where /proc is not. */
  start?: string;
}

const ownerKey = (p: ProcessId): string => `${p.host}/${p.pid}/${p.start ?? ''}`;

function parseOwner(key: string): ProcessId | undefined {
  const m = /^(.*)\/(\d+)\/(\d*)$/.exec(key);
  return m ? { host: m[1], pid: Number(m[2]), ...(m[3] ? { start: m[3] } : {}) } : undefined;
}

/** Field 22 of /proc/PID/stat (after the parenthesised command, which may hold spaces), or undefined. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export const thisProcess = (): ProcessId => ({ host: os.hostname(), pid: process.pid, start: processStart(process.pid) });

/**
 * Whether `owner` is certainly gone: it ran on this host and no process with its pid and start time runs now. A
 * process of another host, or one this host cannot tell about, counts as alive: its activities are left to the
 * heartbeat timeout.
 */
export function isGone(owner: ProcessId, self: ProcessId = thisProcess()): boolean {
  if (owner.host !== self.host) return false;
  if (owner.pid === self.pid && owner.start === self.start) return false;
  if (owner.start !== undefined && self.start !== undefined) return processStart(owner.pid) !== owner.start;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export interface Orphan {
  taskToken: Uint8Array;
  workflowId: string;
  activityType: string;
  owner: string;
  startedAt: number;
}

export interface RecoveryReport {
  /** Attempts failed as WorkerCrashed: the server retries them now. */
  handedBack: Orphan[];
  /** Attempts that had already ended (completed, timed out, cancelled): nothing to do. */
  alreadyEnded: number;
  /** Attempts the server could not be told about (kept for the next start; their heartbeat timeout still applies). */
  failed: { orphan: Orphan; error: string }[];
}

const DEFINITE = new Set([3, 5, 9]); // gRPC INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION

export class InflightActivities {
  private readonly db: Database.Database;
  private readonly owner: string;
  private readonly insert: Database.Statement;
  private readonly remove: Database.Statement;

  constructor(
    file: string,
    private readonly self: ProcessId = thisProcess(),
  ) {
    this.owner = ownerKey(self);
    // A row must outlive the process, not the machine: a host that goes down takes its worker's activities with it,
    // and their heartbeat timeout covers them. NORMAL in WAL mode writes a row without an fsync.
    this.db = openLedgerFile(file, 'NORMAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS activities_in_flight (
      task_token BLOB PRIMARY KEY,
      owner TEXT NOT NULL,
      workflow_id TEXT NOT NULL,
      activity_type TEXT NOT NULL,
      started_at INTEGER NOT NULL
    )`);
    this.insert = this.db.prepare(
      `INSERT OR REPLACE INTO activities_in_flight (task_token, owner, workflow_id, activity_type, started_at) VALUES (?, ?, ?, ?, ?)`,
    );
    this.remove = this.db.prepare(`DELETE FROM activities_in_flight WHERE task_token = ?`);
  }

  begin(taskToken: Uint8Array, workflowId: string, activityType: string): void {
    this.insert.run(Buffer.from(taskToken), this.owner, workflowId, activityType, Date.now());
  }

  end(taskToken: Uint8Array): void {
    this.remove.run(Buffer.from(taskToken));
  }

  /** Every attempt the journal holds, of every owner: this process, others that run, and the gone. */
  rows(): Orphan[] {
    const rows = this.db.prepare(`SELECT task_token, owner, workflow_id, activity_type, started_at FROM activities_in_flight`).all() as {
      task_token: Buffer;
      owner: string;
      workflow_id: string;
      activity_type: string;
      started_at: number;
    }[];
    return rows.map((r) => ({ taskToken: new Uint8Array(r.task_token), owner: r.owner, workflowId: r.workflow_id, activityType: r.activity_type, startedAt: r.started_at }));
  }

  /** The rows whose owner is gone (see isGone). */
  orphans(): Orphan[] {
    return this.rows().filter((r) => {
      const owner = parseOwner(r.owner);
      return owner !== undefined && isGone(owner, this.self);
    });
  }

  /**
   * Fails every orphan's attempt on the server as a retryable WorkerCrashed with no retry delay, so its next attempt
   * is scheduled now instead of at its heartbeat timeout. Call it when the worker starts, before it polls.
   */
  async recover(connection: NativeConnection, namespace: string, identity = this.owner): Promise<RecoveryReport> {
    const report: RecoveryReport = { handedBack: [], alreadyEnded: 0, failed: [] };
    for (const orphan of this.orphans()) {
      try {
        await connection.workflowService.respondActivityTaskFailed({
          namespace,
          identity,
          taskToken: orphan.taskToken,
          failure: {
            message: `the worker process running this attempt (${orphan.owner}) stopped before it finished; a new worker on its host handed it back for a retry`,
            source: 'TypeScriptSDK',
            applicationFailureInfo: { type: FailureType.WorkerCrashed, nonRetryable: false, nextRetryDelay: msToDuration(1) },
          },
        });
        report.handedBack.push(orphan);
        this.end(orphan.taskToken);
      } catch (err) {
        // The server's definite answers: NOT_FOUND, the attempt ended meanwhile (its heartbeat timed out, the run was
        // cancelled or reset); INVALID_ARGUMENT or FAILED_PRECONDITION, a token this cluster or namespace does not know.
        // Anything else (unavailable, a deadline) may pass: the row stays for the next start.
        if (DEFINITE.has((err as { code?: number }).code ?? -1)) {
          report.alreadyEnded++;
          this.end(orphan.taskToken);
        } else {
          report.failed.push({ orphan, error: err instanceof Error ? err.message : String(err) });
        }
      }
    }
    return report;
  }

  /** The activity interceptor that writes down each attempt of this worker (local activities have no task token to hand back). */
  interceptor(): ActivityInterceptorsFactory {
    return (ctx) => ({
      inbound: {
        execute: async (input, next) => {
          const { info } = ctx;
          if (info.isLocal) return next(input);
          // Recovery only makes a retry sooner: a journal that cannot be written (a locked or full disk) must not fail
          // the work, which then falls back to its heartbeat timeout.
          const written = this.attempt(() => this.begin(info.taskToken, info.workflowExecution?.workflowId ?? '', info.activityType), ctx.log);
          try {
            return await next(input);
          } finally {
            if (written) this.attempt(() => this.end(info.taskToken), ctx.log);
          }
        },
      },
    });
  }

  /** `interceptors` with this journal's activity interceptor first (a worker's `interceptors` option). */
  addTo(interceptors: WorkerInterceptors = {}): WorkerInterceptors {
    return { ...interceptors, activity: [this.interceptor(), ...(interceptors.activity ?? [])] };
  }

  private attempt(write: () => void, log: { warn(message: string, attrs?: Record<string, unknown>): void }): boolean {
    try {
      write();
      return true;
    } catch (err) {
      log.warn('could not write the journal of activities in flight; a crash now retries this attempt at its heartbeat timeout', { error: String(err) });
      return false;
    }
  }

  close(): void {
    this.db.close();
  }
}
