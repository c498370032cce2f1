/**
 * "Will this deploy break waiting runs?" Downloads the histories of the open agent runs (and, on request, of recent
 * closed ones) and replays them against the workflow code about to be deployed. A run whose history the new code
 * cannot replay would fail its next workflow task after the deploy: it is reported with the first divergence.
 */
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { WORKFLOW_TYPE } from '../common/constants';
import { quietBundler, WORKFLOWS_PATH } from './workflow-bundle';
import { streamSinks } from '../stream/sinks';

export interface DeployCheckOptions {
  /** A client of the namespace to check, with the data converter the workers use (payloads must decode). */
  client: Client;
  /** The workflow code to deploy: a bundle, or the path of a workflows module to bundle. @default this package's workflow code */
  workflows?: Pick<ReplayWorkerOptions, 'workflowBundle' | 'workflowsPath'>;
  /** At most this many open runs. @default 100 */
  limit?: number;
  /** Also this many of the most recent closed runs (a sample of what the code saw lately). @default 0 */
  recentClosed?: number;
  /** Only runs of this workflow type. @default agentRun */
  workflowType?: string;
  /** A visibility query the runs must also match, e.g. `TaskQueue="agent-runs"`. */
  query?: string;
}

export interface DeployCheckResult {
  /** Runs whose histories were replayed. */
  checked: Array<{ workflowId: string; runId: string }>;
  /** Runs the new code cannot replay, with the first divergence. */
  failures: Array<{ workflowId: string; runId: string; error: string }>;
}

/** `query` is not a visibility query the server accepts; `reason` is the server's, about `query` alone. */
export class DeployCheckQueryError extends Error {
  override readonly name = 'DeployCheckQueryError';
  constructor(
    readonly query: string,
    readonly reason: string,
  ) {
    super(`the query ${JSON.stringify(query)} is not a visibility query the server accepts: ${reason}`);
  }
}

const GRPC_INVALID_ARGUMENT = 3;

/**
 * Asks the server about `query` on its own: refused inside the query built around it, the server's message would
 * point at a position in that (and in its own SQL around it), not in what the caller wrote. The position goes.
 */
async function checkQuery(client: Client, query: string): Promise<void> {
  try {
    await client.workflowService.countWorkflowExecutions({ namespace: client.options.namespace, query });
  } catch (err) {
    if (!isGrpcServiceError(err) || err.code !== GRPC_INVALID_ARGUMENT) throw err;
    const reason = err.details.replace(/^invalid query:\s*/, '').replace(/\s*at position \d+/, '');
    throw new DeployCheckQueryError(query, reason);
  }
}

export async function checkDeploy(options: DeployCheckOptions): Promise<DeployCheckResult> {
  const { client } = options;
  if (options.query !== undefined) await checkQuery(client, options.query);
  const base = `WorkflowType="${options.workflowType ?? WORKFLOW_TYPE}"${options.query ? ` AND (${options.query})` : ''}`;
  const runs = [
    ...(await listRuns(client, `${base} AND ExecutionStatus="Running"`, options.limit ?? 100)),
    ...(options.recentClosed ? await listRuns(client, `${base} AND ExecutionStatus!="Running"`, options.recentClosed) : []),
  ];
  async function* histories() {
    for (const run of runs) yield { workflowId: run.workflowId, history: await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory() };
  }
  const failures: DeployCheckResult['failures'] = [];
  const replay = Worker.runReplayHistories(
    // The stream sink registered (it is not called while replaying), or every replayed step logs an unregistered sink.
    { workflowBundle: await workflowCode(options.workflows), dataConverter: client.options.dataConverter, replayName: 'check-deploy', sinks: streamSinks(undefined) },
    histories(),
  );
  for await (const result of replay) {
    if (result.error) failures.push({ workflowId: result.workflowId, runId: result.runId, error: result.error.message });
  }
  return { checked: runs, failures };
}

/** The code to replay: a bundle as given, or the sources bundled here without webpack's module-by-module report. */
async function workflowCode(workflows: DeployCheckOptions['workflows']): Promise<NonNullable<ReplayWorkerOptions['workflowBundle']>> {
  if (workflows?.workflowBundle) return workflows.workflowBundle;
  return bundleWorkflowCode({ workflowsPath: workflows?.workflowsPath ?? WORKFLOWS_PATH, logger: quietBundler });
}

/**
 * For the CLI: the replay worker's state changes (RUNNING, DRAINING, ...) and the core's warning for each run that
 * fails replay are not worth lines beside the verdict, which reports those runs. Only where nothing has set up the
 * SDK's runtime yet; an embedding program keeps its own logging.
 */
export function quietReplayLogs(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    // Already installed by the program that embeds us: its logger, its choice.
  }
}

/** Runs by a visibility query, newest first, read raw (no memo decoding: a run this client cannot decode still lists). */
async function listRuns(client: Client, query: string, limit: number): Promise<Array<{ workflowId: string; runId: string }>> {
  const runs: Array<{ workflowId: string; runId: string }> = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, query, pageSize: Math.min(limit, 1_000), nextPageToken });
    for (const e of page.executions ?? []) {
      runs.push({ workflowId: e.execution?.workflowId ?? '', runId: e.execution?.runId ?? '' });
      if (runs.length >= limit) return runs;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return runs;
}
