/**
 * The production tier: agent runs on the stack of `npm run stack` (the Temporal Server on PostgreSQL, two worker
 * processes sharing a workspace, a tool ledger and a blob store), which the project's global setup brings up. Each
 * run does two side effects (`recordEffect`, which appends a line per real execution) and answers. kill -9 of a
 * worker, kill -9 of the Temporal Server, and PostgreSQL stopped in `fast` and in `immediate` mode, each mid-run and
 * followed by `up`; a worker on a lost host (its network namespace deleted) and one partitioned for 30 s: every run
 * completes, and no side effect is done twice. Interrupts with a worker on each host: every provider stream closes
 * before its next chunk. A rolling deploy with Worker Versioning: runs in flight stay on their build, new runs go to
 * the new one. Figures in RELIABILITY.md.
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { effectFigures } from '../chaos/effects';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { spawnDetached, stopProcess, type ProcessRecord } from '../scripts/lib/stack/processes';
import { readState, stackConnectionOptions, stackUp, stackWorkerEnv, stopStackPostgres, waitForPoller, type StackState } from '../scripts/lib/stack/stack';
import { clientTlsEnv, tlsFiles } from '../scripts/lib/stack/tls';
import { PROJECT_ROOT } from '../scripts/lib/temporal-cli';
import { AgentClient } from '../src/client';
import { createDataConverter } from '../src/codec';
import { codecSettings } from '../src/config';
import { WORKFLOW_TYPE } from '../src/common/constants';
import type { AgentRunResult } from '../src/common/messages';
import { startScriptedModel, textOf, type ScriptedModel } from '../src/scripted-model';
import { INTERRUPTED_MARK } from '../src/machine/machine';
import { PRODUCTION_ENV, PRODUCTION_MODEL } from './global-setup-production';
import { waitFor } from './support/agent-harness';
import { addHost, deleteHost, forward, removeStaleHosts, setLink, type Host } from './support/netns';

const RUNS = 6;
/** The model of the rolling deploy's workers. */
const DEPLOY_MODEL = 'production-deploy';
/** Each run makes three model calls: effect a, effect b, answer. */
const CALLS_PER_RUN = 3;

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through jest's production project (npm run test:production)`);
  return value;
};
let dir: string;
let model: ScriptedModel;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  dir = env(PRODUCTION_ENV.dir);
  model = await startScriptedModel({ port: Number(env(PRODUCTION_ENV.modelPort)), host: '127.0.0.1' });
  model.register(PRODUCTION_MODEL, ({ request }) => {
    const messages: any[] = request.messages;
    const prompt = messages.filter((m) => m.role === 'user').map((m) => textOf(m.content)).join('\n');
    const run = /run ([\w-]+)/.exec(prompt)?.[1] ?? 'unknown';
    const results = messages.filter((m) => m.role === 'tool');
    // Paced so that runs are mid-way for seconds, and kills land inside model calls and tool calls.
    const slow = { firstChunkDelayMs: 1_000, chunkSize: 8, chunkDelayMs: 100 };
    if (results.length < 2) return { ...slow, toolCalls: [{ name: 'recordEffect', arguments: { runId: run, label: results.length === 0 ? 'a' : 'b' } }] };
    return { ...slow, text: `run ${run} done: ${textOf(results[results.length - 1].content)}` };
  });
  // Over the stack's mTLS, with the TEMPORAL_TLS_* settings its workers get.
  connection = await Connection.connect(stackConnectionOptions(dir, env(PRODUCTION_ENV.address), state().tls ?? 'off'));
  // The workers' payload codecs (claim check on, blobs in the stack's shared blob dir), so results decode here.
  client = new Client({ connection, dataConverter: createDataConverter(codecSettings({ AGENT_BLOB_DIR: path.join(dir, 'agent', 'blobs') })) });
});
afterAll(async () => {
  await connection?.close();
  await model?.close();
});

function state(): StackState {
  const s = readState(dir);
  if (!s) throw new Error(`no stack state in ${dir}`);
  return s;
}

/** What the global setup gives its workers over the stack's own environment; `modelHost` is where they reach the model. */
const workerEnv = (modelHost = '127.0.0.1'): NodeJS.ProcessEnv => ({
  LLM_BASE_URL: `http://${modelHost}:${state().ports.scriptedModel}/v1`,
  LLM_API_KEY: 'scripted',
  LLM_MODEL: PRODUCTION_MODEL,
  CHAOS_EFFECTS_FILE: env(PRODUCTION_ENV.effects),
});

/** The same options as the global setup's `up`, so a second `up` restarts only what died. */
function upAgain(): ReturnType<typeof stackUp> {
  const s = state();
  return stackUp({
    dir,
    ports: s.ports,
    namespace: s.namespace,
    taskQueue: s.taskQueue,
    workers: 2,
    workerScript: 'chaos/worker.ts',
    workerEnv: workerEnv(),
    tls: s.tls,
    log: () => undefined,
  });
}

async function startRuns(tag: string, taskQueue = state().taskQueue): Promise<Array<{ id: string; handle: WorkflowHandle }>> {
  return Promise.all(
    Array.from({ length: RUNS }, async (_, i) => {
      const id = `${tag}-${i}`;
      const handle = await client.workflow.start(WORKFLOW_TYPE, {
        taskQueue,
        workflowId: `${id}-${randomUUID()}`,
        args: [{ prompt: `This is run ${id}. Record effect a, then effect b, then answer.` }],
      });
      return { id, handle };
    }),
  );
}

const completedCalls = (tag: string) => model.requests(PRODUCTION_MODEL).filter((r) => r.completed && JSON.stringify(r.body.messages).includes(`run ${tag}-`)).length;

/** Every run completed with its own answer, after both effects; and no effect was done twice. */
async function expectAllCompletedOnce(runs: Array<{ id: string; handle: WorkflowHandle }>): Promise<number> {
  const results: AgentRunResult[] = await Promise.all(runs.map(({ handle }) => handle.result()));
  results.forEach((result, i) => {
    expect(result).toMatchObject({ status: 'COMPLETED', toolCalls: 2 });
    expect(result.answer).toContain(`run ${runs[i].id} done:`);
  });
  const figures = effectFigures(env(PRODUCTION_ENV.effects), path.join(dir, 'agent', 'tool-ledger.sqlite'), runs.map((r) => r.id));
  expect(figures.doneTwiceKeys).toEqual([]);
  // Each run did its effects; an attempt a kill interrupted is not done again but reported as an unknown outcome.
  expect(figures.completedRunsWithoutEffect).toBe(0);
  return figures.unknownOutcomes;
}

const execFileAsync = promisify(execFile);
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
const identityOf = (pid: number) => `${pid}@${os.hostname()}`;

async function activityRunningOn(handle: WorkflowHandle, identity: string): Promise<boolean> {
  const { raw } = await handle.describe();
  return (raw.pendingActivities ?? []).some((a) => a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && a.lastWorkerIdentity === identity);
}

test('kill -9 of one worker mid-run: every run completes on the other worker, no side effect done twice', async () => {
  const runs = await startRuns(`w${Date.now()}`);
  const tag = runs[0].id.replace(/-0$/, '');
  // A run's activities mostly run where its workflow tasks do (sticky queues, eager activity dispatch), so which worker
  // has runs is up to the first polls: the victim is a worker found running an activity, the survivor the other one.
  await waitFor(() => (completedCalls(tag) >= (RUNS * CALLS_PER_RUN) / 3 ? true : undefined), 120_000, 'a third of the model calls');
  const workers = (['worker-1', 'worker-2'] as const).map((name) => ({ name, record: state().processes[name] }));
  const busy = await waitFor(async () => {
    for (const w of workers) {
      if ((await Promise.all(runs.map((r) => activityRunningOn(r.handle, identityOf(w.record.pid))))).some(Boolean)) return w;
    }
    return undefined;
  }, 60_000, 'an activity running on a worker');
  const victim = busy.record;
  const survivor = workers.find((w) => w !== busy)!.record;
  process.kill(victim.pid, 'SIGKILL');
  const killedAt = Date.now();

  await expectAllCompletedOnce(runs);
  const recoveredMs = Date.now() - killedAt;
  // After the kill only the survivor started activities.
  const starts = (await Promise.all(runs.map((r) => r.handle.fetchHistory()))).flatMap((h) => (h.events ?? []).filter((e) => e.activityTaskStartedEventAttributes));
  const after = starts.filter((e) => Number(e.eventTime?.seconds ?? 0) * 1000 > killedAt + 1_000);
  expect(after.length).toBeGreaterThan(0);
  expect(after.every((e) => e.activityTaskStartedEventAttributes!.identity === identityOf(survivor.pid))).toBe(true);
  console.log(`worker kill -9: all ${RUNS} runs completed ${(recoveredMs / 1000).toFixed(1)} s after the kill`);

  // `up` again brings back the dead worker alone.
  const t0 = Date.now();
  const { started } = await upAgain();
  expect(started).toEqual([busy.name]);
  console.log(`stack up (warm, one worker to restart): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}, 600_000);

test('kill -9 of the Temporal Server mid-run, then a restart: every run completes, no side effect done twice', async () => {
  const runs = await startRuns(`s${Date.now()}`);
  const tag = runs[0].id.replace(/-0$/, '');
  await waitFor(() => (completedCalls(tag) >= (RUNS * CALLS_PER_RUN) / 3 ? true : undefined), 120_000, 'a third of the model calls');
  const server = state().processes.temporal;
  process.kill(server.pid, 'SIGKILL');
  const killedAt = Date.now();
  const callsAtKill = completedCalls(tag);
  // Down for a moment, as a crashed server under a supervisor would be.
  await new Promise((resolve) => setTimeout(resolve, 3_000));

  const restartAt = Date.now();
  const { started } = await upAgain();
  const answeringAt = Date.now();
  expect(started).toEqual(['temporal']);
  // The first run to complete after the restart went through the restarted server (its result is stored there).
  await Promise.race(runs.map((r) => r.handle.result()));
  const firstDoneAt = Date.now();
  expect(completedCalls(tag)).toBeGreaterThan(callsAtKill);

  await expectAllCompletedOnce(runs);
  const doneAt = Date.now();
  console.log(
    `server kill -9: restart answered in ${((answeringAt - restartAt) / 1000).toFixed(1)} s, ` +
      `first run completed ${((firstDoneAt - answeringAt) / 1000).toFixed(1)} s later, ` +
      `all ${RUNS} runs completed ${((doneAt - killedAt) / 1000).toFixed(1)} s after the kill (3 s of it down on purpose)`,
  );
}, 600_000);

test.each(['fast', 'immediate'] as const)('PostgreSQL stopped in %s mode mid-run, then restarted: every run completes, no side effect done twice', async (mode) => {
  const runs = await startRuns(`p${mode}${Date.now()}`);
  const tag = runs[0].id.replace(/-0$/, '');
  await waitFor(() => (completedCalls(tag) >= (RUNS * CALLS_PER_RUN) / 3 ? true : undefined), 120_000, 'a third of the model calls');
  const stoppedAt = Date.now();
  stopStackPostgres(dir, mode);
  await new Promise((resolve) => setTimeout(resolve, 3_000));

  const restartAt = Date.now();
  const { started } = await upAgain();
  const answeringAt = Date.now();
  expect(started).toContain('postgres');
  await Promise.race(runs.map((r) => r.handle.result()));
  const firstDoneAt = Date.now();

  await expectAllCompletedOnce(runs);
  const doneAt = Date.now();
  console.log(
    `PostgreSQL stop -m ${mode}: up again (${started.join(', ')}) in ${((answeringAt - restartAt) / 1000).toFixed(1)} s, ` +
      `first run completed ${((firstDoneAt - answeringAt) / 1000).toFixed(1)} s later, ` +
      `all ${RUNS} runs completed ${((doneAt - stoppedAt) / 1000).toFixed(1)} s after the stop (3 s of it down on purpose)`,
  );
}, 600_000);

/**
 * A rolling deploy with Worker Deployment Versioning, on a task queue of its own: workers of build A, then of build B
 * beside them; `agent check-deploy` against the live cluster; B made current. Runs that started on A are PINNED: they
 * finish on A's worker (workflow tasks and activities) even though they wake after the switch; new runs go to B.
 */
test('a rolling deploy: runs in flight stay on build A, new runs go to build B, then A drains and stops', async () => {
  const s = state();
  const queue = 'production-deploy';
  const deploymentName = `agents-${Date.now()}`;
  const { workflowService } = connection;
  const workers: ProcessRecord[] = [];
  // Runs of build A hold their second model call until the switch is done, so they are in flight across it.
  let release!: () => void;
  const switched = new Promise<void>((resolve) => (release = resolve));
  model.register(DEPLOY_MODEL, async ({ request }) => {
    const messages: any[] = request.messages;
    const run = /run ([\w-]+)/.exec(messages.filter((m) => m.role === 'user').map((m) => textOf(m.content)).join('\n'))?.[1] ?? 'unknown';
    const results = messages.filter((m) => m.role === 'tool');
    if (results.length === 1 && run.startsWith('dA')) await switched;
    if (results.length < 2) return { toolCalls: [{ name: 'recordEffect', arguments: { runId: run, label: results.length === 0 ? 'a' : 'b' } }] };
    return { text: `run ${run} done: ${textOf(results[results.length - 1].content)}` };
  });
  const version = (buildId: string) => ({ deploymentName, buildId });
  async function startBuild(buildId: string): Promise<ProcessRecord> {
    const versioned = { ...workerEnv(), LLM_MODEL: DEPLOY_MODEL, AGENT_DEPLOYMENT_NAME: deploymentName, AGENT_BUILD_ID: buildId };
    const log = path.join(dir, 'logs', `deploy-${buildId}.log`);
    const pid = spawnDetached(process.execPath, ['--import', 'tsx', 'chaos/worker.ts'], { cwd: PROJECT_ROOT, env: stackWorkerEnv({ dir, namespace: s.namespace, taskQueue: queue, workerEnv: versioned }, s.ports, env(PRODUCTION_ENV.address)), logFile: log });
    const worker: ProcessRecord = { pid, marker: 'chaos/worker.ts', log, ports: [], startedAt: new Date().toISOString() };
    workers.push(worker);
    // The version exists once its worker has polled the queue.
    await waitFor(
      () => workflowService.describeWorkerDeploymentVersion({ namespace: s.namespace, deploymentVersion: version(buildId) }).then((d) => (d.workerDeploymentVersionInfo?.taskQueueInfos ?? []).some((q) => q.name === queue) || undefined, () => undefined),
      120_000,
      `build ${buildId} to poll ${queue}`,
    );
    return worker;
  }
  /**
   * Makes `buildId` current and waits until the server has propagated the routing to the task queue's partitions:
   * `set` returns before that, and a run started in between may still go to the old build.
   */
  const setCurrent = async (buildId: string) => {
    await workflowService.setWorkerDeploymentCurrentVersion({ namespace: s.namespace, deploymentName, buildId, identity: 'production-test' });
    const completed = temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED;
    await waitFor(
      () => workflowService.describeWorkerDeployment({ namespace: s.namespace, deploymentName }).then((d) => d.workerDeploymentInfo?.routingConfigUpdateState === completed || undefined),
      60_000,
      `the routing to ${buildId} to propagate`,
    );
  };
  /** Per run: the build ids of its completed workflow tasks, with their versioning behaviour, and who ran its activities. */
  async function placement(handle: WorkflowHandle) {
    const events = (await handle.fetchHistory()).events ?? [];
    const tasks = events.flatMap((e) => (e.workflowTaskCompletedEventAttributes ? [e.workflowTaskCompletedEventAttributes] : []));
    return {
      builds: [...new Set(tasks.map((t) => t.deploymentVersion?.buildId ?? 'unversioned'))],
      pinned: tasks.every((t) => t.versioningBehavior === temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED),
      activityWorkers: [...new Set(events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.identity] : [])))],
      wokeAfter: (at: number) => events.some((e) => e.workflowTaskCompletedEventAttributes && ms(e.eventTime) > at),
    };
  }

  try {
    const a = await startBuild('build-a');
    await setCurrent('build-a');
    const old = await startRuns(`dA${Date.now()}`, queue);
    // Every old run has done effect a on A and waits on its second model call.
    await waitFor(() => (model.requests(DEPLOY_MODEL).filter((r) => /run dA/.test(JSON.stringify(r.body.messages)) && JSON.stringify(r.body.messages).includes('"role":"tool"')).length >= RUNS ? true : undefined), 120_000, 'every run of A at its second model call');
    const b = await startBuild('build-b');

    // The gate of the deploy: the new code replays every open run of this queue.
    const check = await execFileAsync(process.execPath, ['--import', 'tsx', 'src/bin/agent.ts', 'check-deploy', '--query', `TaskQueue="${queue}"`], {
      cwd: PROJECT_ROOT,
      // Over the stack's TLS, as an operator's CLI would connect.
      env: { ...process.env, ...(s.tls && s.tls !== 'off' ? clientTlsEnv(s.tls, tlsFiles(dir)) : {}), TEMPORAL_ADDRESS: env(PRODUCTION_ENV.address), TEMPORAL_NAMESPACE: s.namespace, AGENT_BLOB_DIR: path.join(dir, 'agent', 'blobs') },
    });
    // The verdict, then each run it replayed by name (id and run id).
    const [verdict, ...replayed] = check.stdout.trimEnd().split('\n');
    expect(verdict).toBe(`replayed ${RUNS} run(s): all replay with this code`);
    expect(replayed.map((line) => /^ {2}ok {5}(\S+) \(/.exec(line)?.[1]).sort()).toEqual(old.map((r) => r.handle.workflowId).sort());

    const switchAt = Date.now();
    await setCurrent('build-b');
    const switchMs = Date.now() - switchAt;
    const fresh = await startRuns(`dB${Date.now()}`, queue);
    const firstOnB = await Promise.race(fresh.map(({ handle }) => waitFor(async () => ((await placement(handle)).builds.includes('build-b') ? Date.now() : undefined), 60_000, 'a new run on build B')));
    release();

    await expectAllCompletedOnce([...old, ...fresh]);
    const oldPlaces = await Promise.all(old.map((r) => placement(r.handle)));
    const freshPlaces = await Promise.all(fresh.map((r) => placement(r.handle)));
    // The old runs woke after the switch, and yet every task of theirs ran on A.
    expect(oldPlaces.every((p) => p.wokeAfter(switchAt))).toBe(true);
    expect(oldPlaces.map((p) => [p.builds, p.pinned, p.activityWorkers])).toEqual(old.map(() => [['build-a'], true, [identityOf(a.pid)]]));
    expect(freshPlaces.map((p) => [p.builds, p.pinned, p.activityWorkers])).toEqual(fresh.map(() => [['build-b'], true, [identityOf(b.pid)]]));
    const moved = oldPlaces.filter((p) => p.builds.includes('build-b')).length;

    // A has no open runs left: it is draining (the server confirms DRAINED after its visibility grace period), and stops.
    const described = await workflowService.describeWorkerDeploymentVersion({ namespace: s.namespace, deploymentVersion: version('build-a') });
    const drainage = described.workerDeploymentVersionInfo?.drainageInfo?.status;
    expect(drainage).toBeGreaterThan(0); // DRAINING or DRAINED, not UNSPECIFIED: no longer current
    const { count } = await workflowService.countWorkflowExecutions({ namespace: s.namespace, query: `TaskQueue="${queue}" AND ExecutionStatus="Running"` });
    expect(Number(count)).toBe(0);
    expect(await stopProcess(a, 40_000)).toBe('stopped');
    console.log(
      `rolling deploy: set-current-version to B, propagated, took ${switchMs} ms; the first new run ran on B ${firstOnB - switchAt} ms after the switch began; ` +
        `${RUNS} runs in flight across it, ${moved} moved to B, all finished on A; ${RUNS} new runs all on B`,
    );
  } finally {
    release();
    await Promise.all(workers.map((w) => stopProcess(w, 40_000)));
  }
}, 600_000);

/**
 * A worker on a host of its own (a network namespace, support/netns.ts) beside worker-1; worker-2 is stopped for these
 * tests, so worker-1 is the one survivor. They run last: worker-2 stays down.
 */
describe('a worker on another host', () => {
  const forwarders: Array<{ close: () => Promise<void> }> = [];
  beforeAll(async () => {
    removeStaleHosts();
    await stopProcess(state().processes['worker-2'], 40_000);
  });
  afterAll(async () => {
    await Promise.all(forwarders.map((f) => f.close()));
    removeStaleHosts();
  });

  /** Namespace `daw-<n>` with a stack worker in it, reaching the frontend and the model through the veth. */
  async function hostedWorker(n: number): Promise<{ host: Host; worker: ProcessRecord }> {
    const host = addHost(n);
    const s = state();
    for (const port of [s.ports.frontend, s.ports.scriptedModel]) forwarders.push(await forward(host.hostAddress, port));
    const address = `${host.hostAddress}:${s.ports.frontend}`;
    const workerProcessEnv = stackWorkerEnv({ dir, namespace: s.namespace, taskQueue: s.taskQueue, workerEnv: workerEnv(host.hostAddress) }, s.ports, address);
    const log = path.join(dir, 'logs', `${host.ns}.log`);
    // `ip netns exec` execs the command in place: the pid is the worker's, and so is its identity.
    const pid = spawnDetached('ip', ['netns', 'exec', host.ns, process.execPath, '--import', 'tsx', 'chaos/worker.ts'], { cwd: PROJECT_ROOT, env: workerProcessEnv, logFile: log });
    const worker: ProcessRecord = { pid, marker: 'chaos/worker.ts', log, ports: [], startedAt: new Date().toISOString() };
    await waitForPoller(stackConnectionOptions(dir, env(PRODUCTION_ENV.address), s.tls ?? 'off'), s.namespace, s.taskQueue, worker);
    return { host, worker };
  }

  interface InFlight {
    handle: WorkflowHandle;
    activityId: string;
    activityType: string;
    attempt: number;
    startedAt: number;
  }
  async function inFlightOn(runs: Array<{ handle: WorkflowHandle }>, identity: string): Promise<InFlight[]> {
    const described = await Promise.all(runs.map(async ({ handle }) => ({ handle, pending: (await handle.describe()).raw.pendingActivities ?? [] })));
    return described.flatMap(({ handle, pending }) =>
      pending
        .filter((a) => a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && a.lastWorkerIdentity === identity)
        .map((a) => ({ handle, activityId: a.activityId!, activityType: a.activityType?.name ?? '?', attempt: a.attempt ?? 1, startedAt: ms(a.lastStartedTime) })),
    );
  }

  /** When the server started the next attempt of `a` (pending, or already completed and in the history); null when `a` finished before the fault. */
  async function nextAttemptStartedAt(a: InFlight): Promise<{ at: number; identity: string } | null | undefined> {
    const { raw } = await a.handle.describe();
    const pending = (raw.pendingActivities ?? []).find((p) => p.activityId === a.activityId);
    if (pending) {
      const restarted = (pending.attempt ?? 1) > a.attempt && pending.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
      return restarted ? { at: ms(pending.lastStartedTime), identity: pending.lastWorkerIdentity ?? '?' } : undefined;
    }
    const events = (await a.handle.fetchHistory()).events ?? [];
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityId === a.activityId);
    const started = events.find((e) => scheduled && Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === Number(scheduled.eventId));
    if (!started) return undefined;
    const attrs = started.activityTaskStartedEventAttributes!;
    return (attrs.attempt ?? 1) > a.attempt ? { at: ms(started.eventTime), identity: attrs.identity ?? '?' } : null;
  }

  /** For each activity in flight at the fault that did not finish first: its type and how long until its next attempt started. */
  async function takeoverTimes(inFlight: InFlight[], faultAt: number): Promise<Array<{ type: string; ms: number; identity: string }>> {
    const next = await Promise.all(inFlight.map((a) => waitFor(() => nextAttemptStartedAt(a), 120_000, `the next attempt of ${a.activityType}`)));
    const retried = inFlight.flatMap((a, i) => (next[i] ? [{ type: a.activityType, ms: next[i].at - faultAt, identity: next[i].identity }] : []));
    expect(retried.length).toBeGreaterThan(0);
    return retried;
  }

  async function waitForInFlight(runs: Array<{ id: string; handle: WorkflowHandle }>, worker: ProcessRecord): Promise<InFlight[]> {
    const tag = runs[0].id.replace(/-0$/, '');
    await waitFor(() => (completedCalls(tag) >= (RUNS * CALLS_PER_RUN) / 3 ? true : undefined), 120_000, 'a third of the model calls');
    // The fault lands while a model call that started there under 600 ms ago runs: its first chunk comes after 1 s, so
    // it is still in flight, and the server must retry it elsewhere (a 200 ms tool call may finish in the meantime).
    const young = (a: InFlight) => a.activityType === 'callModel' && Date.now() - a.startedAt < 600;
    let inFlight: InFlight[] = [];
    await waitFor(async () => ((inFlight = await inFlightOn(runs, identityOf(worker.pid))).some(young) ? true : undefined), 60_000, 'a model call starting on the hosted worker');
    return inFlight;
  }

  test('a lost host (its namespace deleted with the worker and its disk): every run completes on the survivor, no side effect done twice', async () => {
    const { host, worker } = await hostedWorker(1);
    const survivor = state().processes['worker-1'];
    const runs = await startRuns(`h${Date.now()}`);
    const inFlight = await waitForInFlight(runs, worker);
    deleteHost(host.ns);
    const lostAt = Date.now();

    const takeovers = await takeoverTimes(inFlight, lostAt);
    await expectAllCompletedOnce(runs);
    const doneMs = Date.now() - lostAt;
    const starts = (await Promise.all(runs.map((r) => r.handle.fetchHistory()))).flatMap((h) => (h.events ?? []).filter((e) => e.activityTaskStartedEventAttributes));
    const after = starts.filter((e) => ms(e.eventTime) > lostAt + 1_000);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((e) => e.activityTaskStartedEventAttributes!.identity === identityOf(survivor.pid))).toBe(true);
    expect(takeovers.map((t) => t.identity)).toEqual(takeovers.map(() => identityOf(survivor.pid)));
    console.log(
      `lost host: in flight there ${takeovers.map((t) => `${t.type} retried ${(t.ms / 1000).toFixed(1)} s after the loss`).join(', ')}; ` +
        `all ${RUNS} runs completed ${(doneMs / 1000).toFixed(1)} s after it`,
    );
  }, 600_000);

  test("one provider quota for two hosts: a worker here and one in another namespace share the budget in the stack's Redis, and the provider answers no 429", async () => {
    const s = state();
    const queue = `production-quota-${Date.now()}`;
    const QUOTA_RUNS = 16;
    const TPM = 3_000;
    // A provider of its own, enforcing TPM as a bucket refilled continuously; each call is about 300 tokens.
    const provider = await startScriptedModel({ host: '127.0.0.1', tokensPerMinute: TPM });
    provider.register('quota', () => ({ text: 'done' }));
    const host = addHost(3);
    const port = Number(new URL(provider.url).port);
    for (const p of [s.ports.frontend, s.ports.redis, port]) forwarders.push(await forward(host.hostAddress, p));
    const budget = (reach: string): NodeJS.ProcessEnv => ({
      LLM_BASE_URL: `http://${reach}:${port}/v1`,
      LLM_API_KEY: 'scripted',
      LLM_MODEL: 'quota',
      LLM_TOKENS_PER_MINUTE: String(TPM),
      AGENT_QUOTA_REDIS_URL: `redis://${reach}:${s.ports.redis}`,
      LLM_QUOTA_NAME: queue,
      AGENT_STREAM_URL: 'off',
    });
    const spawnWorker = (name: string, reach: string, ns?: string): ProcessRecord => {
      const address = `${reach}:${s.ports.frontend}`;
      const workerProcessEnv = stackWorkerEnv({ dir, namespace: s.namespace, taskQueue: queue, workerEnv: budget(reach) }, s.ports, address);
      const log = path.join(dir, 'logs', `${name}.log`);
      const command = ns ? ['ip', ['netns', 'exec', ns, process.execPath, '--import', 'tsx', 'src/bin/worker.ts']] as const : [process.execPath, ['--import', 'tsx', 'src/bin/worker.ts']] as const;
      const pid = spawnDetached(command[0], [...command[1]], { cwd: PROJECT_ROOT, env: workerProcessEnv, logFile: log });
      return { pid, marker: 'src/bin/worker.ts', log, ports: [], startedAt: new Date().toISOString() };
    };
    const workers = [spawnWorker('quota-here', '127.0.0.1'), spawnWorker('quota-there', host.hostAddress, host.ns)];
    try {
      const options = stackConnectionOptions(dir, env(PRODUCTION_ENV.address), s.tls ?? 'off');
      await Promise.all(workers.map((w) => waitForPoller(options, s.namespace, queue, w)));
      const t0 = Date.now();
      const prompt = (i: number) => `Quota run ${i}. ${'Summarise this line of text. '.repeat(40)}`;
      const handles = await Promise.all(
        Array.from({ length: QUOTA_RUNS }, (_, i) => client.workflow.start(WORKFLOW_TYPE, { taskQueue: queue, workflowId: `${queue}-${i}`, args: [{ prompt: prompt(i), maxOutputTokens: 16 }] })),
      );
      const results: AgentRunResult[] = await Promise.all(handles.map((h) => h.result()));
      const wallMs = Date.now() - t0;
      expect(results.map((r) => r.status)).toEqual(results.map(() => 'COMPLETED'));
      const requests = provider.requests('quota');
      expect(requests.filter((r) => r.rateLimited)).toHaveLength(0);
      // Both hosts made model calls: the budget was shared, not one worker doing all the work.
      const byWorker = new Map<string, number>();
      for (const h of handles) {
        for (const e of (await h.fetchHistory()).events ?? []) {
          const identity = e.activityTaskStartedEventAttributes?.identity;
          if (identity) byWorker.set(identity, (byWorker.get(identity) ?? 0) + 1);
        }
      }
      expect([...byWorker.keys()].sort()).toEqual(workers.map((w) => identityOf(w.pid)).sort());
      // The batch needs about QUOTA_RUNS x 300 tokens: more than a minute's, so some runs waited.
      const tokens = requests.length * Math.ceil(prompt(0).length / 4);
      console.log(`quota on two hosts: ${QUOTA_RUNS} runs, ${requests.length} requests, 0 answered 429, ${(wallMs / 1000).toFixed(1)} s (ideal ${(((tokens - TPM) / TPM) * 60).toFixed(1)} s); calls by worker ${JSON.stringify(Object.fromEntries(byWorker))}`);
    } finally {
      await Promise.all(workers.map((w) => stopProcess(w, 40_000)));
      deleteHost(host.ns);
      await provider.close();
    }
  }, 600_000);

  test('interrupts on two hosts: every stream closes before the provider would send its next chunk, whichever worker streams it', async () => {
    const { host, worker } = await hostedWorker(4);
    const survivor = state().processes['worker-1'];
    // The role chunk at once, then a text chunk every 8 s: the run's partialText follows the stream every 3 s when a live
    // stream is up (the stack's), so the run has the first text well before the second comes. The second call says
    // which message it got.
    const GAP_MS = 8_000;
    const name = `production-interrupt-${Date.now()}`;
    model.register(name, ({ request }) => {
      const users = (request.messages as any[]).filter((m) => m.role === 'user');
      return users.length === 1 ? { text: 'First part. Second part. Third part.', chunkSize: 12, chunkDelayMs: GAP_MS } : { text: `Now doing: ${textOf(users.at(-1).content)}` };
    });
    const agents = new AgentClient(client, state().taskQueue);
    try {
      const runs = await Promise.all(Array.from({ length: RUNS }, (_, i) => agents.start({ prompt: `Interrupted run ${i}: write in parts.`, model: name })));
      // Each run is interrupted once it has the first text, while the call waits for its next chunk.
      const sent = await Promise.all(
        runs.map(async (run) => {
          await waitFor(async () => ((await run.state()).partialText.length > 0 ? true : undefined), 60_000, 'the first text of a run');
          const at = Date.now();
          await run.sendMessage('stop now', { interrupt: true });
          return at;
        }),
      );
      const results = await Promise.all(runs.map((run) => run.result()));
      expect(results.map((r) => r.answer)).toEqual(runs.map(() => 'Now doing: stop now'));
      const byRun = (await Promise.all(runs.map((run) => run.state({ includeMessages: true })))).map((s) => s.messages?.find((m) => m.role === 'assistant' && m.interrupted));
      expect(byRun.map((m) => m?.content)).toEqual(runs.map(() => `First part. ${INTERRUPTED_MARK}`));
      const first = (id: string) => model.requests(name).find((r) => JSON.stringify(r.body.messages).includes(`Interrupted run ${id}:`));
      // Server-side times only: the first text chunk went at receivedAt + GAP_MS, the next would have gone GAP_MS later.
      const requests = runs.map((_, i) => first(String(i))!);
      for (const r of requests) {
        expect(r).toMatchObject({ completed: false, closedByClient: true });
        expect(r.closedAt).toBeLessThan(r.receivedAt + 2 * GAP_MS);
      }
      // Which worker streamed each first call, and which one's workflow task applied the interrupt: the same one can
      // stop the call at once (the modelCalls sink); another hears of it at the call's next heartbeat.
      const paths = await Promise.all(
        runs.map(async (run) => {
          const events = (await client.workflow.getHandle(run.workflowId).fetchHistory()).events ?? [];
          const streamedBy = events.find((e) => e.activityTaskStartedEventAttributes)?.activityTaskStartedEventAttributes?.identity;
          const cancel = events.find((e) => e.activityTaskCancelRequestedEventAttributes);
          const appliedBy = cancel && events.find((e) => e.eventId?.toString() === cancel.activityTaskCancelRequestedEventAttributes!.workflowTaskCompletedEventId?.toString())?.workflowTaskCompletedEventAttributes?.identity;
          return { streamedBy, sameWorker: streamedBy === appliedBy };
        }),
      );
      const hosts = new Set(paths.map((p) => p.streamedBy));
      expect([...hosts].every((id) => id === identityOf(worker.pid) || id === identityOf(survivor.pid))).toBe(true);
      const closedMs = requests.map((r, i) => r.closedAt! - sent[i]);
      console.log(
        `interrupts on two hosts: ${RUNS} runs, streamed by ${[...hosts].length} workers; stream closed ${closedMs.map((m, i) => `${m} ms (${paths[i].sameWorker ? 'same worker' : 'other worker'})`).join(', ')} after the interrupt was sent`,
      );
    } finally {
      await stopProcess(worker, 40_000);
      deleteHost(host.ns);
    }
  }, 300_000);

  test('a 30 s partition between a worker and the server, then healed: every run completes, no side effect done twice', async () => {
    const { host, worker } = await hostedWorker(2);
    const runs = await startRuns(`n${Date.now()}`);
    const inFlight = await waitForInFlight(runs, worker);
    setLink(host, 'down');
    const cutAt = Date.now();
    await sleep(30_000);
    setLink(host, 'up');
    const healedAt = Date.now();

    const takeovers = await takeoverTimes(inFlight, cutAt);
    // Healed: the worker polls the task queue again.
    const identity = identityOf(worker.pid);
    const rejoinedAt = await waitFor(async () => {
      const { pollers } = await connection.workflowService.describeTaskQueue({ namespace: state().namespace, taskQueue: { name: state().taskQueue }, taskQueueType: 1 });
      const seen = (pollers ?? []).find((p) => p.identity === identity);
      return seen && ms(seen.lastAccessTime) > healedAt ? ms(seen.lastAccessTime) : undefined;
    }, 180_000, 'the healed worker to poll again');
    await expectAllCompletedOnce(runs);
    const doneMs = Date.now() - cutAt;
    console.log(
      `partition of 30 s: in flight there ${takeovers.map((t) => `${t.type} retried ${(t.ms / 1000).toFixed(1)} s after the cut by ${t.identity === identityOf(worker.pid) ? 'the partitioned worker' : 'worker-1'}`).join(', ')}; ` +
        `the worker polled again ${((rejoinedAt - healedAt) / 1000).toFixed(1)} s after the heal; all ${RUNS} runs completed ${(doneMs / 1000).toFixed(1)} s after the cut`,
    );
    deleteHost(host.ns);
  }, 600_000);
});
