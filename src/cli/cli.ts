/**
 * The agent CLI's commands: a thin shell over `AgentClient`, through the client's entry (src/client.ts) like any
 * other embedder; every command takes `--json`. Errors print one line to stderr and exit 1. The process is
 * `src/bin/agent.ts` (`npm run agent -- <command>`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import {
  AgentClient,
  AgentMemory,
  DEFAULT_CONTROL_TIMEOUT_MS,
  failureReason,
  InvalidAgentInputError,
  isAlreadyStarted,
  runFailure,
  type AgentRunHandle,
  type AgentRunSummary,
  type WatchEvent,
} from '../client';
import { parseAgentRunInput, type AgentRunInput } from '../common/input';

type Limits = NonNullable<AgentRunInput['limits']>;
type ApprovalInput = NonNullable<AgentRunInput['approval']>;
type Budget = NonNullable<AgentRunInput['budget']>;
import type { AgentRunResult, ControlResult, RunStateView } from '../common/messages';
import { claimCheckSettings, ledgerFile, parseDuration, retentionSettings, temporalSettings } from '../config';
import { registerSearchAttributes, REQUIRED_SEARCH_ATTRIBUTES } from '../config/search-attributes';
import type { ForkEdits } from '../client';
import { formatDiff } from './format-diff';
import { decimal, integer, jsonObject } from './args';
import { registerMemoryCommands } from './memory';
import { registerScheduleCommands } from './schedule';
import { AgentState, isTerminal } from '../common/states';
import type { ControlRecord, PendingApproval, PlanStepStatus } from '../common/view';
import { actorLabel, type Actor } from '../common/actor';
import { tableEdges } from '../machine/machine';
import { GRAPH_FORMATS, machineGraph, type GraphFormat } from '../machine/graph';

function graphFormat(value: string): GraphFormat {
  if (!(GRAPH_FORMATS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${GRAPH_FORMATS.join(', ')}`);
  return value as GraphFormat;
}

/** What the CLI needs from the outside world; tests replace it. */
export interface CliDeps {
  /** Opens the client for commands that talk to Temporal. @default `AgentClient.connect()`, settings from the environment */
  connect(): Promise<AgentClient>;
  /** The memory store of `agent memory` (no Temporal needed). @default `new AgentMemory()`: AGENT_MEMORY, else ./.agent/memory.sqlite */
  memory(): AgentMemory;
  /** Writes to stdout as is (no newline added). */
  out(text: string): void;
  /** Writes to stderr as is (no newline added). */
  err(text: string): void;
}

const defaultDeps: CliDeps = {
  connect: () => AgentClient.connect(),
  memory: () => new AgentMemory(),
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** Runs one CLI command; `argv` holds the user arguments only (no node, no script). Resolves with the exit code. */
export async function runCli(argv: string[], overrides: Partial<CliDeps> = {}): Promise<number> {
  const deps: CliDeps = { ...defaultDeps, ...overrides };
  const state = { exitCode: 0 };
  try {
    await buildProgram(deps, state).parseAsync(argv, { from: 'user' });
    return state.exitCode;
  } catch (err) {
    // Commander has already printed its own message (usage errors, --help).
    if (err instanceof CommanderError) return err.exitCode;
    deps.err(`error: ${describeError(err)}\n`);
    return 1;
  }
}

interface JsonOption {
  json?: boolean;
}

interface ControlFlags extends JsonOption {
  waitMs?: number;
}

function buildProgram(deps: CliDeps, state: { exitCode: number }): Command {
  const { out } = deps;
  const print = (text: string) => out(`${text}\n`);
  const printJson = (doc: unknown) => out(`${JSON.stringify(doc)}\n`);

  /** Runs `fn` with a connected client and always closes it. */
  async function withClient<T>(fn: (client: AgentClient) => Promise<T>): Promise<T> {
    const client = await deps.connect();
    try {
      return await fn(client);
    } finally {
      await client.close();
    }
  }

  const program = new Command('agent')
    .description('Start, inspect and steer durable agent runs (agentRun workflows).')
    .exitOverride()
    .configureOutput({ writeOut: deps.out, writeErr: deps.err })
    .showSuggestionAfterError()
    .helpCommand('help [command]', 'show the help of a command (as <command> --help does)');

  const command = (nameAndArgs: string, description: string) =>
    program.command(nameAndArgs).description(description).option('--json', 'machine-readable output');

  runInputOptions(command('start <prompt>', 'start a run'))
    .option('--id <workflowId>', 'workflow id (default: agent-<random>)')
    .option('--watch', 'follow the run until it ends')
    .action(async (prompt: string, o: StartFlags) => {
      const input = startInput(prompt, o);
      // Validate before connecting: bad input should not depend on the server being up.
      const problem = startInputProblem(input);
      if (problem) throw new InvalidAgentInputError(problem);
      await withClient(async (client) => {
        const handle = await client.start(input, { workflowId: o.id });
        if (o.json) printJson({ type: 'started', workflowId: handle.workflowId, runId: handle.runId });
        else print(`started ${handle.workflowId} (run ${handle.runId})`);
        if (o.watch) state.exitCode = await watch(handle, o.json);
      });
    });

  command('state <workflowId>', 'show the current state of a run')
    .option('--messages', 'include the conversation')
    .action(async (workflowId: string, o: JsonOption & { messages?: boolean }) => {
      const view = await withClient((client) => client.handle(workflowId).state({ includeMessages: o.messages }));
      if (o.json) printJson(view);
      else print(formatState(workflowId, view));
    });

  command('watch <workflowId>', 'follow a run: transitions, streamed text, then the answer or reason')
    .action(async (workflowId: string, o: JsonOption) => {
      state.exitCode = await withClient((client) => watch(client.handle(workflowId), o.json));
    });

  /** The control commands wait this long for the run to take the control; later, the run refuses it. */
  const control = (nameAndArgs: string, description: string) =>
    command(nameAndArgs, description).option(
      '--wait-ms <n>',
      `how long the run has to take it (default ${DEFAULT_CONTROL_TIMEOUT_MS}); past that the command fails, nothing is recorded, and the run refuses it if it arrives later`,
      integer,
    );
  /** One line for an accepted abort, pause or resume: where the run stands now. */
  const printControl = (workflowId: string, name: string, result: ControlResult, json: boolean | undefined) => {
    if (json) printJson({ workflowId, signal: name, sent: true, ...result });
    else if (result.delivery === 'signal') print(`${name} sent to ${workflowId} as a signal (the run has no ${name} update): it applies at the run's next step`);
    else print(`${name} accepted by ${workflowId}: ${result.state}${result.pauseRequested ? ', pause requested' : ''}`);
  };

  control('abort <workflowId>', 'abort a run (exit 1 if it refuses, e.g. it has ended)')
    .option('--reason <reason>', 'why (kept as the run\'s reason)')
    .action(async (workflowId: string, o: ControlFlags & { reason?: string }) => {
      const result = await withClient((client) => client.handle(workflowId).abort(o.reason, { timeoutMs: o.waitMs, by: operator() }));
      printControl(workflowId, 'abort', result, o.json);
    });

  for (const [name, verb] of [
    ['pause', 'pause a run before its next piece of work (exit 1 if it refuses, e.g. a pause is already requested)'],
    ['resume', 'resume a paused run, or cancel a requested pause (exit 1 if there is neither)'],
  ] as const) {
    control(`${name} <workflowId>`, verb).action(async (workflowId: string, o: ControlFlags) => {
      const result = await withClient((client) => client.handle(workflowId)[name]({ timeoutMs: o.waitMs, by: operator() }));
      printControl(workflowId, name, result, o.json);
    });
  }

  control('approve <workflowId> <toolCallId>', 'approve (or reject) a tool call waiting for approval')
    .option('--reject', 'reject the call instead')
    .option('--feedback <text>', 'note for the model, with an approval or a rejection: it reads it in one user message after the turn\'s tool results')
    .option('--arguments <json>', 'approve with these arguments (a JSON object) instead of the model\'s; checked against the tool\'s schema', jsonObject)
    .action(async (workflowId: string, toolCallId: string, o: ControlFlags & { reject?: boolean; feedback?: string; arguments?: Record<string, unknown> }) => {
      const result = await withClient((client) =>
        client
          .handle(workflowId)
          .approve({ toolCallId, approved: !o.reject, feedback: o.feedback, ...(o.arguments ? { arguments: o.arguments } : {}) }, { timeoutMs: o.waitMs, by: operator() }),
      );
      if (o.json) printJson(result);
      else print(`${result.approved ? 'approved' : 'rejected'} ${result.toolCallId} (${result.remaining} still waiting)`);
    });

  control('send <workflowId> <text>', 'send a message to the model, handed over before its next call')
    .option('--interrupt', 'stop the work in flight for it: cancel the model call (its text so far kept, marked interrupted), stop tools that may be stopped, reject undecided approvals')
    .action(async (workflowId: string, text: string, o: ControlFlags & { interrupt?: boolean }) => {
      const result = await withClient((client) => client.handle(workflowId).sendMessage(text, { timeoutMs: o.waitMs, interrupt: o.interrupt, by: operator() }));
      if (o.json) printJson(result);
      else if (result.interrupted) print('interrupted: the message goes with the next model call');
      // None waiting: the run took it at once (an open conversation goes on with it).
      else if (result.queued === 0) print('message taken: the model reads it in its next call, which starts now');
      else print(`message queued (${result.queued} waiting for the next model call)`);
    });

  command('result <workflowId>', 'wait for a run to end and print its result (exit 1 if it failed)')
    .action(async (workflowId: string, o: JsonOption) => {
      const outcome = await withClient((client) => settle(client.handle(workflowId)));
      if (o.json) printJson(outcome);
      else print(formatOutcome(outcome));
      if (outcome.status === 'FAILED') state.exitCode = 1;
    });

  command('history <workflowId>', 'list the steps of a run (each a state change; step 0 is the run before its start), for diff and fork')
    .action(async (workflowId: string, o: JsonOption) => {
      const steps = await withClient((client) => client.handle(workflowId).steps());
      if (o.json) printJson(steps);
      else {
        // Step 0 holds no state change, so the run does not list it: it is the run as started, what `fork --from-step 0` takes.
        if (steps[0]?.step === 1) print(`${'0'.padStart(4)}  ${clock(steps[0].at)}  the run before its start (fork --from-step 0: a fresh run of the same input)`);
        for (const s of steps) print(`${String(s.step).padStart(4)}  ${clock(s.at)}  ${s.from} -> ${s.to} (${s.event})`);
      }
    });

  command('diff <workflowId> <stepA> [stepB]', 'show what changed in a run between two steps (or, with --runs A B, between two runs, e.g. a run and a what-if fork of it): each added (+), removed (-) or changed value with its path')
    .option('--runs', 'compare two runs as they are now: agent diff --runs <workflowIdA> <workflowIdB>')
    .action(async (workflowId: string, a: string, b: string | undefined, o: JsonOption & { runs?: boolean }) => {
      if (!o.runs && b === undefined) throw new InvalidAgentInputError('diff needs two steps: agent diff <workflowId> <stepA> <stepB> (or two runs: agent diff --runs <A> <B>)');
      if (o.runs && b !== undefined) throw new InvalidAgentInputError('diff --runs takes two workflow ids: agent diff --runs <A> <B>');
      const diff = await withClient((client) => (o.runs ? client.diffRuns(workflowId, a) : client.handle(workflowId).diff(stepNumber('stepA', a), stepNumber('stepB', b!))));
      if (o.json) printJson(diff);
      else print(formatDiff(diff));
    });

  command('check-deploy', 'replay the open runs against this code (or --workflows): would the deploy break any?')
    .option('--workflows <path>', 'the workflows module about to be deployed (default: this package\'s)')
    .option('--limit <n>', 'at most this many open runs', integer, 100)
    .option('--recent <n>', 'also this many recent closed runs', integer, 0)
    .option('--query <query>', 'a visibility query the runs must also match, e.g. TaskQueue="agent-runs"')
    .action(async (o: JsonOption & { workflows?: string; limit: number; recent: number; query?: string }) => {
      // Loaded here only: replay needs the worker's native core, which the other commands do without.
      const { checkDeploy, DeployCheckQueryError, quietReplayLogs } = await import('../worker/check-deploy');
      quietReplayLogs();
      const workflows = o.workflows ? { workflowsPath: path.resolve(o.workflows) } : undefined;
      const result = await withClient((client) => checkDeploy({ client: client.client, workflows, limit: o.limit, recentClosed: o.recent, query: o.query })).catch((err: unknown) => {
        if (err instanceof DeployCheckQueryError) throw new InvalidAgentInputError(`--query ${JSON.stringify(err.query)}: not a visibility query the server accepts: ${err.reason}`);
        throw err;
      });
      if (o.json) printJson(result);
      else {
        print(`replayed ${result.checked.length} run(s): ${result.failures.length === 0 ? 'all replay with this code' : `${result.failures.length} would fail`}`);
        // Each run by name, so that "all replay" can be checked against the runs the operator expected.
        const failed = new Map(result.failures.map((f) => [`${f.workflowId}/${f.runId}`, f.error]));
        for (const r of result.checked) {
          const error = failed.get(`${r.workflowId}/${r.runId}`);
          print(`  ${error === undefined ? 'ok    ' : 'FAILS '} ${r.workflowId} (${r.runId})${error === undefined ? '' : `: ${oneLine(error, 300)}`}`);
        }
      }
      if (result.failures.length > 0) state.exitCode = 1;
    });

  command('gc', 'delete the blobs and tool-ledger rows no open run, and no run closed within retention, can read (--dry-run: list them)')
    .option('--dry-run', 'list what would be deleted; delete nothing')
    .option('--retention <duration>', 'runs closed longer ago than this are no longer read, e.g. 7d (default: AGENT_RETENTION, else the namespace\'s retention)')
    .option('--grace <duration>', 'keep what was written within this long though no run names it yet (default: AGENT_RETENTION_GRACE, else 24h)')
    .option('--blob-dir <path>', 'the blob store (default: AGENT_BLOB_DIR, else ./.agent/blobs)')
    .option('--ledger <path>', 'the tool ledger (default: AGENT_LEDGER, else ./.agent/tool-ledger.sqlite)')
    .option('--task-queue <name>', "read only the runs of this task queue, the fleet that writes the store (default: TEMPORAL_TASK_QUEUE, else the worker's default)")
    .action(async (o: JsonOption & { dryRun?: boolean; retention?: string; grace?: string; blobDir?: string; ledger?: string; taskQueue?: string }) => {
      // Loaded here only: the ledger's SQLite is native code the other commands do without.
      const [{ SqliteToolLedger }, { FsBlobStore, pruneStore }] = await Promise.all([import('../activities/tools/ledger'), import('../codec')]);
      const settings = retentionSettings();
      const claimCheck = claimCheckSettings();
      const blobDir = o.blobDir ?? (claimCheck.enabled ? claimCheck.blobDir : undefined);
      const file = o.ledger ?? ledgerFile();
      const ledger = existsSync(file) ? new SqliteToolLedger(file) : undefined;
      try {
        const report = await withClient(async ({ client }) =>
          pruneStore({
            connection: client,
            namespace: client.options.namespace,
            taskQueue: o.taskQueue ?? temporalSettings().taskQueue,
            payloadCodecs: client.options.loadedDataConverter.payloadCodecs,
            ...(blobDir ? { store: new FsBlobStore(blobDir) } : {}),
            ...(ledger ? { ledger } : {}),
            retentionMs: o.retention !== undefined ? parseDuration('--retention', o.retention) : settings.retentionMs,
            graceMs: o.grace !== undefined ? parseDuration('--grace', o.grace) : settings.graceMs,
            dryRun: o.dryRun ?? false,
          }),
        );
        if (o.json) printJson(report);
        else {
          const verb = report.dryRun ? 'would delete' : 'deleted';
          for (const name of report.blobs.deleted) print(`${verb} blob ${name}`);
          for (const key of report.ledgerRows) print(`${verb} ledger row ${key}`);
          print(
            `${report.dryRun ? 'dry run: ' : ''}${report.runsRead} run(s) readable (retention ${Math.round(report.retentionMs / 3_600_000)}h); ` +
              `${verb} ${report.blobs.deleted.length} blob(s) (${report.blobs.deletedBytes} bytes) and ${report.ledgerRows.length} ledger row(s); kept ${report.blobs.kept} blob(s)`,
          );
        }
      } finally {
        ledger?.close();
      }
    });

  command('setup-cluster', 'register the search attributes agent runs need on this namespace (self-hosted clusters; idempotent)')
    .action(async (o: JsonOption) => {
      const result = await withClient((client) => registerSearchAttributes(client.client.connection.operatorService, client.client.options.namespace));
      if (o.json) printJson(result);
      else {
        const attrs = (names: string[]) => names.map((n) => `${n} (${REQUIRED_SEARCH_ATTRIBUTES[n as keyof typeof REQUIRED_SEARCH_ATTRIBUTES]})`).join(', ');
        if (result.added.length) print(`namespace ${result.namespace}: added ${attrs(result.added)}${result.present.length ? `; already there: ${attrs(result.present)}` : ''}`);
        else print(`namespace ${result.namespace}: nothing to do, ${attrs(result.present)} already registered`);
      }
    });

  command('fork <workflowId>', 'start a new run from the snapshot a run had right after a step; with an edit, a what-if fork')
    .requiredOption('--from-step <n>', 'the step to carry on from (0: a fresh run of the same input; not the last, where the run ended)', integer)
    .option('--id <workflowId>', 'workflow id of the new run')
    .option('--watch', 'follow the new run until it ends')
    .option('--tool-result <toolCallId=text>', 'what-if: this tool call\'s result instead (repeatable)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--message <text>', 'what-if: a user message for the next model call')
    .option('--model <model>', 'what-if: this model from the fork on')
    .option('--system-prompt <text>', 'what-if: this system prompt from the fork on')
    .option('--replay', 'reuse the original\'s recorded model answers while the requests are the same (the default with an edit)')
    .option('--no-replay', 'send every model call again, even with an edit')
    .action(async (workflowId: string, o: JsonOption & { fromStep: number; id?: string; watch?: boolean; toolResult?: string[]; message?: string; model?: string; systemPrompt?: string; replay?: boolean }) => {
      const edits = forkEdits(o);
      await withClient(async (client) => {
        const handle = await client.fork(workflowId, o.fromStep, { workflowId: o.id, edits, replay: o.replay });
        if (o.json) printJson({ type: 'started', workflowId: handle.workflowId, runId: handle.runId, forkedFrom: { workflowId, step: o.fromStep } });
        else print(`started ${handle.workflowId} from step ${o.fromStep} of ${workflowId}`);
        if (o.watch) state.exitCode = await watch(handle, o.json);
      });
    });

  command('list', 'list agent runs: open ones first (newest first), then the most recently closed')
    .option('--state <state>', 'only runs in this AgentState (e.g. AWAITING_APPROVAL)')
    .option('--limit <n>', 'most runs to show (default 20)', integer)
    .option('--q <text>', "runs whose id or prompt holds this text (any case), as the gateway's q")
    .option('--agent <name>', 'runs of this named agent')
    .option('--since <time>', 'runs started at or after this ISO 8601 time', isoTime)
    .option('--until <time>', 'runs started at or before this ISO 8601 time', isoTime)
    .option('--parent <workflowId>', 'child runs of this workflow')
    .option('--fork-of <workflowId>', 'forks of this run')
    .option('--schedule <scheduleId>', 'runs this schedule started')
    .action(async (o: JsonOption & { state?: string; limit?: number; q?: string; agent?: string; since?: string; until?: string; parent?: string; forkOf?: string; schedule?: string }) => {
      // States are upper case (the AgentState search attribute); `--state completed` means the same.
      const state = o.state?.toUpperCase();
      const { q, agent, since, until, parent, forkOf, schedule } = o;
      if ([q, agent, since, until, parent, forkOf, schedule].every((f) => f === undefined)) {
        const runs = await withClient((client) => client.list({ state, limit: o.limit }));
        if (o.json) printJson(runs);
        else print(formatList(runs.map((r) => ({ ...r, executionStatus: r.status })), o.state));
        return;
      }
      // The gateway's search (src/client/run-list.ts), from the same memo and visibility query.
      const runs = await withClient((client) => client.search({ state, limit: o.limit, q, agent, since, until, parent, forkOf, schedule }));
      if (o.json) printJson(runs);
      else print(formatList(runs, o.state));
    });

  command('graph', "print the state machine from its table (the workflow's own rows): each edge an event with its guard")
    .option('--format <format>', `mermaid (a stateDiagram-v2) or dot (Graphviz); --json prints the edges (default mermaid)`, graphFormat, 'mermaid' as GraphFormat)
    .option('--no-self-loops', 'leave out the rows that keep the state (requests recorded, messages queued)')
    .action((o: JsonOption & { format: GraphFormat; selfLoops: boolean }) => {
      if (o.json) printJson({ initial: AgentState.IDLE, edges: tableEdges().filter((e) => o.selfLoops || e.from !== e.to) });
      else out(machineGraph(o.format, { selfLoops: o.selfLoops }));
    });

  registerMemoryCommands(program, deps, state);
  registerScheduleCommands(program, {
    withClient,
    print,
    printJson,
    runInputOptions,
    runInput: (prompt, flags) => startInput(prompt, flags as Omit<StartFlags, 'json' | 'id' | 'watch'>),
    runInputProblem: startInputProblem,
  });

  /** Follows a run to its end; the exit code is 1 when it failed. */
  async function watch(handle: AgentRunHandle, json: boolean | undefined): Promise<number> {
    const onEvent = json ? (event: WatchEvent) => printJson(event) : humanWatchPrinter(out);
    const last = await handle.watch(onEvent);
    return last.state === 'FAILED' ? 1 : 0;
  }

  return program;
}

/** The flags that make a run's input (`startInput`): `agent start`'s and `agent schedule create`'s. */
function runInputOptions(cmd: Command): Command {
  return cmd
    .option('--agent <name>', 'a named agent of the worker; the flags below override its settings')
    .option('--model <model>', 'model name, or provider/model for a provider of the worker\'s LLM_PROVIDERS (default: the worker\'s LLM_MODEL)')
    .option('--fallback-models <names>', 'comma-separated models to move to, in order, when the model is gone, refuses the keys, or has spent its quota, retries or time')
    .option('--messages-file <path>', 'a prior conversation: a JSON array of messages in OpenAI\'s chat format; the prompt follows it', conversationFile)
    .option('--return-messages', 'the result carries the whole conversation (result --json shows it)')
    .option('--system <prompt>', 'system prompt')
    .option('--plan [form]', "ask the model for a plan first: steps (the default: a list of steps with progress) or text")
    .option('--critique <mode>', 'rules | model | custom:<name> (a critic the worker registers)')
    .option('--model-call-timeout-ms <n>', 'a model call with its retries, in ms, before it fails or moves to a fallback model (default 1200000)', integer)
    .option('--model-attempt-timeout-ms <n>', 'one attempt of a model call, the critic or a compaction, in ms (default 300000)', integer)
    .option('--critic-timeout-ms <n>', 'the critic with its retries, in ms, before the rule critic decides (default 120000)', integer)
    .option('--compaction-timeout-ms <n>', 'a compaction with its retries, in ms (default 1200000)', integer)
    .option('--approve-tools <names>', 'comma-separated tools whose calls wait for approval (* for all)')
    .option('--max-loops <n>', 'loops (model calls for planning and answering, counted as they start) before the run fails', integer)
    .option('--max-tool-calls <n>', 'tool calls before the run fails', integer)
    .option('--timeout-ms <n>', 'working time of the run in ms before it fails (time waiting for an approval or paused does not count)', integer)
    .option('--approval-timeout-ms <n>', 'longest wait for one approval before --on-approval-timeout applies', integer)
    .option('--on-approval-timeout <what>', 'fail (default) | reject: reject the calls still waiting, tell the model, go on')
    .option('--approval-reminder-at <share>', 'share of --approval-timeout-ms (e.g. 0.8) at which an undecided wait raises an approvalReminder event', decimal)
    .option('--max-paused-ms <n>', 'a run paused this long is aborted', integer)
    .option('--on-limit <what>', 'fail (default) | complete: at --max-loops or --max-tool-calls end COMPLETED with the last text')
    .option('--max-tokens <n>', 'budget: total tokens (prompt and completion) the run may use', integer)
    .option('--max-cost-usd <usd>', 'budget: total cost in US dollars, from the worker\'s price table', decimal)
    .option('--on-budget-exceed <what>', 'fail (default) | approve: wait for an approval of toolCallId "budget", which extends the budget by its size')
    .option('--keep-open-ms <n>', 'after the answer, keep the conversation open this long for `agent send` to continue it (default 0)', integer)
    .option('--tools <names>', 'comma-separated tools the run may use, and named agents it may call as child runs (default: every tool, no agent, no remember/recall)')
    .option('--memory-namespace <namespace>', 'the namespace the run\'s remember and recall tools use (default: default); name them in --tools');
}

interface StartFlags extends JsonOption {
  agent?: string;
  model?: string;
  fallbackModels?: string;
  messagesFile?: unknown[];
  returnMessages?: boolean;
  system?: string;
  plan?: boolean | string;
  critique?: string;
  modelCallTimeoutMs?: number;
  modelAttemptTimeoutMs?: number;
  criticTimeoutMs?: number;
  compactionTimeoutMs?: number;
  approveTools?: string;
  maxLoops?: number;
  maxToolCalls?: number;
  timeoutMs?: number;
  approvalTimeoutMs?: number;
  onApprovalTimeout?: string;
  approvalReminderAt?: number;
  maxPausedMs?: number;
  onLimit?: string;
  maxTokens?: number;
  maxCostUsd?: number;
  onBudgetExceed?: string;
  keepOpenMs?: number;
  tools?: string;
  memoryNamespace?: string;
  id?: string;
  watch?: boolean;
}

/** The workflow input from the flags; absent flags stay absent so the schema's defaults apply. */
export function startInput(prompt: string, o: Omit<StartFlags, 'json' | 'id' | 'watch'>): AgentRunInput {
  const limits = definedOnly({
    maxLoops: o.maxLoops,
    maxToolCalls: o.maxToolCalls,
    timeoutMs: o.timeoutMs,
    approvalTimeoutMs: o.approvalTimeoutMs,
    maxPausedMs: o.maxPausedMs,
    onLimit: o.onLimit as Limits['onLimit'] | undefined,
  });
  const approval = definedOnly({
    tools: o.approveTools !== undefined ? names(o.approveTools) : undefined,
    onTimeout: o.onApprovalTimeout as ApprovalInput['onTimeout'],
    reminderAt: o.approvalReminderAt,
  });
  const budget = definedOnly({ maxTokens: o.maxTokens, maxCostUsd: o.maxCostUsd, onExceed: o.onBudgetExceed as Budget['onExceed'] });
  const timeouts = definedOnly({ modelCallMs: o.modelCallTimeoutMs, modelAttemptMs: o.modelAttemptTimeoutMs, criticMs: o.criticTimeoutMs, compactionMs: o.compactionTimeoutMs });
  return {
    prompt,
    ...definedOnly({ agent: o.agent, model: o.model, systemPrompt: o.system, keepOpenMs: o.keepOpenMs }),
    ...(Object.keys(budget).length ? { budget: budget as Budget } : {}),
    ...(Object.keys(limits).length ? { limits } : {}),
    ...(o.tools !== undefined ? { tools: names(o.tools) } : {}),
    ...(o.memoryNamespace !== undefined ? { memory: { namespace: o.memoryNamespace } } : {}),
    ...(o.fallbackModels !== undefined ? { fallbackModels: names(o.fallbackModels) } : {}),
    ...(o.messagesFile !== undefined ? { messages: o.messagesFile as AgentRunInput['messages'] } : {}),
    ...(o.returnMessages ? { returnMessages: true } : {}),
    ...(o.plan ? { plan: (o.plan === true ? 'steps' : o.plan) as AgentRunInput['plan'] } : {}),
    ...(o.critique !== undefined ? { critique: critiqueFlag(o.critique) } : {}),
    ...(Object.keys(timeouts).length ? { timeouts } : {}),
    ...(Object.keys(approval).length ? { approval: approval as ApprovalInput } : {}),
  };
}

/** `--critique`: `rules`, `model`, or `custom:<name>` for a critic the worker registers; anything else the schema refuses. */
function critiqueFlag(mode: string): AgentRunInput['critique'] {
  return (mode.startsWith('custom:') ? { custom: mode.slice('custom:'.length) } : mode) as AgentRunInput['critique'];
}

/** The flag that sets each input field: a refusal names what the operator typed, with the field beside it. */
const FLAGS: Record<string, string> = {
  prompt: '<prompt>',
  agent: '--agent',
  model: '--model',
  fallbackModels: '--fallback-models',
  messages: '--messages-file',
  systemPrompt: '--system',
  critique: '--critique',
  'critique.custom': '--critique',
  'timeouts.modelCallMs': '--model-call-timeout-ms',
  'timeouts.modelAttemptMs': '--model-attempt-timeout-ms',
  'timeouts.criticMs': '--critic-timeout-ms',
  'timeouts.compactionMs': '--compaction-timeout-ms',
  tools: '--tools',
  'memory.namespace': '--memory-namespace',
  keepOpenMs: '--keep-open-ms',
  'approval.tools': '--approve-tools',
  'approval.onTimeout': '--on-approval-timeout',
  'approval.reminderAt': '--approval-reminder-at',
  'limits.maxLoops': '--max-loops',
  'limits.maxToolCalls': '--max-tool-calls',
  'limits.timeoutMs': '--timeout-ms',
  'limits.approvalTimeoutMs': '--approval-timeout-ms',
  'limits.maxPausedMs': '--max-paused-ms',
  'limits.onLimit': '--on-limit',
  budget: '--max-tokens/--max-cost-usd',
  'budget.maxTokens': '--max-tokens',
  'budget.maxCostUsd': '--max-cost-usd',
  'budget.onExceed': '--on-budget-exceed',
};

/** `--max-loops (limits.maxLoops)` for a field path; a path under a flag's field (`messages.3.content`) keeps its rest. */
function flagOf(field: string): string {
  if (FLAGS[field]) return `${FLAGS[field]} (${field})`;
  const parent = Object.keys(FLAGS)
    .filter((f) => field.startsWith(`${f}.`))
    .sort((a, b) => b.length - a.length)[0];
  return parent ? `${FLAGS[parent]} (${field})` : field;
}

/**
 * What is wrong with the input the flags built, in the flags' names; null when nothing. An approval or budget setting
 * without what it qualifies is said as such, not as the schema's missing field the operator never typed.
 */
export function startInputProblem(input: AgentRunInput): string | null {
  const given = (flags: Array<[unknown, string]>) => flags.filter(([v]) => v !== undefined).map(([, flag]) => flag);
  if (input.approval && input.approval.tools === undefined) {
    const flags = given([[input.approval.reminderAt, '--approval-reminder-at'], [input.approval.onTimeout, '--on-approval-timeout']]);
    return `${flags.join(' and ')} need${flags.length > 1 ? '' : 's'} --approve-tools: the tools whose calls wait for approval`;
  }
  if (input.budget && input.budget.maxTokens === undefined && input.budget.maxCostUsd === undefined) {
    return '--on-budget-exceed needs --max-tokens or --max-cost-usd: the budget it applies to';
  }
  const parsed = parseAgentRunInput(input);
  if (parsed.ok) return null;
  const issues = parsed.error.replace(/^Invalid agentRun input: /, '').split('; ');
  return issues
    .map((issue) => {
      const at = issue.indexOf(': ');
      const [field, message] = at < 0 ? ['', issue] : [issue.slice(0, at), issue.slice(at + 2)];
      // Fields named inside a message (`needs limits.approvalTimeoutMs`) are flags too.
      const said = message.replace(/\b(limits|approval|budget)\.[A-Za-z]+\b/g, (f) => flagOf(f));
      return field ? `${flagOf(field)}: ${said}` : said;
    })
    .join('; ');
}

/** `--messages-file`: the file's JSON array; the input schema then checks each message. */
function conversationFile(file: string): unknown[] {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new InvalidArgumentError(`cannot read a JSON conversation from ${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(value)) throw new InvalidArgumentError(`${file} must hold a JSON array of messages`);
  return value;
}

/** A finished run as `result` prints it: the workflow's result, or why it failed. */
export type RunOutcome =
  | AgentRunResult
  | ({ status: 'FAILED'; reason: string; failureType?: string } & Partial<Omit<AgentRunResult, 'status' | 'reason'>>);

async function settle(handle: AgentRunHandle): Promise<RunOutcome> {
  try {
    return await handle.result();
  } catch (err) {
    const failure = runFailure(err);
    if (!failure) throw err;
    return { ...failure.result, status: 'FAILED', reason: failure.reason, failureType: failure.type, answer: null };
  }
}

function describeError(err: unknown): string {
  if (isAlreadyStarted(err)) return `an agent run with id ${err.workflowId} is already running`;
  return failureReason(err);
}

/** A step named on the command line; thrown from an action, so the message is ours to print (commander prints only its own). */
function stepNumber(name: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new Error(`${name} must be a step number (see \`agent history\`), got "${value}"`);
  return Number(value);
}



function isoTime(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}/.test(value.trim()) || Number.isNaN(Date.parse(value))) throw new InvalidArgumentError('expected an ISO 8601 time, e.g. 2026-12-01T09:00:00Z');
  return value.trim();
}


const names = (list: string): string[] =>
  list
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);

function definedOnly<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// ---- human output ----

/** `HH:MM:SS.mmm` in local time: transitions happen within seconds of each other. */
function clock(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function dateTime(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

const oneLine = (text: string, max = 160): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
};

const indent = (text: string, by = '  '): string =>
  text
    .split('\n')
    .map((l) => by + l)
    .join('\n');

/** Who sends the CLI's controls: the operator at it, by their login name (`USER` when the system has none). */
export function operator(): Actor {
  let name: string | undefined;
  try {
    name = userInfo().username;
  } catch {
    name = process.env.USER ?? process.env.USERNAME;
  }
  return { kind: 'operator', name: (name || 'unknown').slice(0, 200) };
}

/** ` by user alice (acme) at 14:00:00.000`: who decided, and when. */
const byAt = (by: Actor | undefined, at: string | undefined): string => (by ? ` by ${actorLabel(by)}${at ? ` at ${clock(at)}` : ''}` : '');

/** One mark per step status, as `agent state` lists a structured plan. */
const PLAN_MARK: Record<PlanStepStatus, string> = { pending: '[ ]', active: '[>]', done: '[x]', retried: '[>]', replanned: '[-]' };

const approvalLine = (p: PendingApproval): string =>
  `${p.toolCallId}  ${p.name} ${oneLine(p.arguments, 100)}` +
  (p.decision ? `  [${p.decision.approved ? 'approved' : 'rejected'}${byAt(p.decision.by, p.decision.at)}]` : '');

/** One control the run took: `14:00:00.000  APPROVAL w1 approved  by operator bob (step 5)`. */
const controlLine = (c: ControlRecord): string => {
  const what = c.event === 'APPROVAL' ? ` ${c.toolCallId} ${c.approved ? (c.edited ? 'approved, edited' : 'approved') : 'rejected'}` : '';
  return `  ${clock(c.at)}  ${c.event}${what}  by ${actorLabel(c.by)} (step ${c.step})`;
};

/** Model calls are those answered (`usage.modelCalls`); loops are the model steps begun, the `limits.maxLoops` counter. */
const counters = (r: Pick<AgentRunResult, 'loops' | 'toolCalls' | 'usage'>): string =>
  `model calls ${r.usage.modelCalls}, loops ${r.loops}, tool calls ${r.toolCalls}, tokens ${r.usage.totalTokens}`;

/** A run refused for bad input never started: it applied no limits (its view holds placeholders). */
const inputRefused = (v: RunStateView): boolean => v.transitions.some((t) => t.event === 'INVALID_INPUT');

/** A counter with its limit, or alone when the run applied none. */
const ofLimit = (v: RunStateView, count: number, limit: number): string => (inputRefused(v) ? `${count}` : `${count}/${limit}`);

/** Prints watch events as they come: transitions and notes on their own lines, streamed text inline as it grows. */
export function humanWatchPrinter(write: (text: string) => void): (event: WatchEvent) => void {
  let atLineStart = true;
  const line = (text: string) => {
    write(`${atLineStart ? '' : '\n'}${text}\n`);
    atLineStart = true;
  };
  const streamed = (text: string) => {
    text.split('\n').forEach((part, i) => {
      if (i > 0) {
        write('\n');
        atLineStart = true;
      }
      if (!part) return;
      write(`${atLineStart ? '  | ' : ''}${part}`);
      atLineStart = false;
    });
  };
  return (event) => {
    switch (event.type) {
      case 'transition': {
        const t = event.transition;
        line(`${clock(t.at)}  ${t.from} -> ${t.to} (${t.event})`);
        break;
      }
      case 'approval':
        for (const p of event.pending) line(`  waiting for approval: ${approvalLine(p)}`);
        break;
      case 'approvalReminder':
        line(`  reminder: ${event.toolCallIds.join(', ')} still waiting for approval; at ${clock(event.deadline)} the run will ${event.onTimeout === 'reject' ? 'reject them and go on' : 'fail'}`);
        break;
      case 'restart':
        line(`  (model call ${event.callNumber} restarted, attempt ${event.attempt})`);
        break;
      case 'toolStart':
        line(`  tool ${event.name}(${oneLine(event.arguments, 80)}) …`);
        break;
      case 'toolEnd':
        if (event.rejected) line(`  tool ${event.name} rejected, not run: ${oneLine(event.output, 100)}`);
        else line(`  tool ${event.name} ${event.ok ? 'done' : 'failed'} in ${event.durationMs} ms: ${oneLine(event.output, 100)}`);
        break;
      case 'retry': {
        const { retry } = event;
        const failure = retry.lastFailure ? ` after ${retry.lastFailure.type ?? 'an error'}: ${oneLine(retry.lastFailure.message, 100)}` : '';
        line(`  retrying ${retry.activity}, attempt ${retry.attempt}${failure}${retry.nextAttemptAt ? ` (next at ${clock(retry.nextAttemptAt)})` : ''}`);
        break;
      }
      case 'text':
        streamed(event.text);
        break;
      case 'end':
        line(formatEnd(event.state));
        break;
    }
  };
}

function formatEnd(view: RunStateView): string {
  const head = view.state === 'COMPLETED' ? `COMPLETED  ${counters(view)}` : `${view.state}: ${view.reason ?? 'no reason given'}`;
  const lines = [head];
  if (view.state !== 'COMPLETED') lines.push(`  ${counters(view)}`);
  if (view.answer) lines.push('answer:', indent(view.answer));
  return lines.join('\n');
}

function formatOutcome(outcome: RunOutcome): string {
  const lines = [outcome.status === 'COMPLETED' ? 'COMPLETED' : `${outcome.status}: ${outcome.reason ?? 'no reason given'}`];
  if (outcome.usage && outcome.loops !== undefined && outcome.toolCalls !== undefined) lines.push(`  ${counters(outcome as AgentRunResult)}`);
  if (outcome.answer) lines.push('answer:', indent(outcome.answer));
  return lines.join('\n');
}

const RECENT_TRANSITIONS = 5;

function formatState(workflowId: string, v: RunStateView): string {
  const lines = [
    ...(v.stored ? [`(stored copy from ${v.stored.at}; ${v.stored.reason})`] : []),
    `${workflowId}  ${v.state} since ${clock(v.stateSince)} (step ${v.step})`,
    `  model calls ${v.usage.modelCalls}, loops ${ofLimit(v, v.loops, v.limits.maxLoops)}, tool calls ${ofLimit(v, v.toolCalls, v.limits.maxToolCalls)}, ` +
      `tokens ${v.usage.totalTokens}, messages ${v.messageCount}${inputRefused(v) ? ' (input refused: no limits applied)' : ''}`,
  ];
  // Views of workers from before fallback models have no modelSwitches.
  for (const m of v.modelSwitches ?? []) lines.push(`  model switched from ${m.from ?? 'the default'} to ${m.to} at step ${m.step}: ${oneLine(m.error, 160)}`);
  // Views of workers from before agents as tools have no children.
  for (const c of v.children ?? []) lines.push(`  child ${c.workflowId} (agent ${c.agent}): ${c.state}, tokens ${c.usage.totalTokens}`);
  if (v.pauseRequested) lines.push('  pause requested');
  // Views of workers from before the budget have no quotaWait.
  if (v.quotaWait) lines.push(`  waiting for quota since ${clock(v.quotaWait.since)}: room expected at ${clock(v.quotaWait.expectedAt)}, ${v.quotaWait.position} calls ahead`);
  for (const r of v.retrying ?? []) {
    const failure = r.lastFailure ? `, last failure ${r.lastFailure.type ?? 'error'}: ${oneLine(r.lastFailure.message, 120)}` : '';
    lines.push(`  retrying ${r.activity}: attempt ${r.attempt}${failure}${r.nextAttemptAt ? `, next at ${clock(r.nextAttemptAt)}` : ''}`);
  }
  for (const p of v.pendingApproval) lines.push(`  approval: ${approvalLine(p)}`);
  lines.push(...waitLines(v));
  const modelStep = v.state === AgentState.STREAMING || v.state === AgentState.PLANNING;
  if (modelStep && v.stream && v.partialText) lines.push(`  streaming (call ${v.stream.callNumber}): ${oneLine(v.partialText)}`);
  if (v.queuedMessages.length) lines.push(`  queued messages: ${v.queuedMessages.length}`);
  // Views of workers from before structured plans have no planSteps.
  if (v.planSteps && v.planProgress) {
    lines.push(`  plan: ${v.planProgress.done}/${v.planProgress.total} steps done${v.planProgress.allDone ? ' (all done)' : ''}`);
    v.planSteps.forEach((p, i) => lines.push(`    ${PLAN_MARK[p.status]} ${i + 1}. ${oneLine(p.title, 120)}${p.attempts ? ` (${p.attempts} more attempt${p.attempts > 1 ? 's' : ''})` : ''}${p.status === 'done' || p.status === 'pending' ? '' : ` [${p.status}]`}`));
  } else if (v.plan) lines.push(`  plan: ${oneLine(v.plan)}`);
  if (v.lastError) lines.push(`  last error: ${oneLine(v.lastError)}`);
  if (v.reason) lines.push(`  reason: ${oneLine(v.reason, 300)}`);
  if (v.answer) lines.push('  answer:', indent(v.answer, '    '));
  lines.push(...toolLines(v));
  // Views of workers from before issue 52 have no controls.
  const controls = v.controls ?? [];
  if (controls.length) {
    const shown = controls.slice(-RECENT_TRANSITIONS);
    lines.push(`controls${shown.length < controls.length ? ` (last ${shown.length} of ${controls.length})` : ''}:`, ...shown.map(controlLine));
  }
  const rejected = v.rejectedEvents.at(-1);
  if (rejected) lines.push(`  refused events: ${v.rejectedEvents.length} (last: ${rejected.event} in ${rejected.state}: ${rejected.error})`);
  if (v.transitions.length) {
    const shown = v.transitions.slice(-RECENT_TRANSITIONS);
    // The view's last transitions end at `step`; those before are paged by `agent history`.
    const earlier = shown.length > 0 ? v.step - shown.length : 0;
    lines.push(`transitions${earlier ? ` (last ${shown.length} of ${v.step}; ${earlier} earlier: agent history)` : ''}:`);
    for (const t of shown) lines.push(`  ${clock(t.at)}  ${t.from} -> ${t.to} (${t.event})`);
  }
  if (v.messages) {
    lines.push(`messages (${v.messages.length}):`);
    for (const m of v.messages) {
      const calls = m.role === 'assistant' && m.toolCalls?.length ? ` [calls ${m.toolCalls.map((c) => `${c.name}#${c.id}`).join(', ')}]` : '';
      const from = m.role === 'tool' ? `tool#${m.toolCallId}` : m.role;
      lines.push(`  ${from}:${m.content ? ` ${oneLine(m.content, 200)}` : ''}${calls}`);
    }
  }
  return lines.join('\n');
}

/** What a waiting (or open) run holds an operator to: the approval deadline, a pause's way back, the open conversation. */
function waitLines(v: RunStateView): string[] {
  const lines: string[] = [];
  if (v.approvalDeadline) {
    const then = v.approvalOnTimeout === 'reject' ? 'rejects the undecided calls and goes on' : v.approvalOnTimeout === 'fail' ? 'fails' : 'ends the wait (approval.onTimeout)';
    lines.push(`  approval deadline ${clock(v.approvalDeadline)}: then the run ${then}`);
  }
  if (v.state === AgentState.PAUSED) {
    const left = v.workRemainingMs !== null ? `, working time left ${v.workRemainingMs} ms` : '';
    lines.push(`  paused: resume goes on in ${v.resumeTo ?? 'the state it paused before'}${left}`);
    if (v.pausedDeadline) lines.push(`  aborted at ${clock(v.pausedDeadline)} unless resumed (limits.maxPausedMs)`);
  } else if (v.workRemainingMs !== null && !isTerminal(v.state)) {
    lines.push(`  working time left ${v.workRemainingMs} ms (the clock stops while a person decides)`);
  }
  if (v.conversationOpen) lines.push('  conversation open: `agent send` continues it with a follow-up turn (keepOpenMs)');
  return lines;
}

/** The run's recent tool calls, as the run page's table shows them. */
function toolLines(v: RunStateView): string[] {
  if (!v.recentToolCalls.length) return [];
  const outcome = (t: RunStateView['recentToolCalls'][number]) => (t.ok === null ? 'running' : t.ok ? 'ok' : t.rejected ? 'rejected' : 'failed');
  const marks = (t: RunStateView['recentToolCalls'][number]) =>
    [t.edited ? 'edited' : '', t.policy ? `policy ${t.policy}` : '', t.decidedBy ? `${t.rejected ? 'rejected' : 'approved'}${byAt(t.decidedBy, t.decidedAt)}` : ''].filter(Boolean).map((m) => ` [${m}]`).join('');
  return [
    `tool calls (last ${v.recentToolCalls.length}):`,
    ...v.recentToolCalls.map((t) => `  step ${t.startStep}  ${t.toolCallId}  ${t.name} ${oneLine(t.arguments, 100)}${marks(t)}  ${outcome(t)}${t.output ? `: ${oneLine(t.output, 100)}` : ''}`),
  ];
}

function formatList(runs: Array<Pick<AgentRunSummary, 'workflowId' | 'agentState'> & { executionStatus: string; startTime: string | Date; scheduleId?: string | null }>, state: string | undefined): string {
  if (!runs.length) return state ? `no agent runs in state ${state}` : 'no agent runs';
  // The schedule that started a run, in a column of its own once any run listed has one.
  const scheduled = runs.some((r) => r.scheduleId);
  const rows = [
    ['WORKFLOW ID', 'AGENT STATE', 'EXECUTION', ...(scheduled ? ['SCHEDULE'] : []), 'STARTED'],
    ...runs.map((r) => [r.workflowId, r.agentState ?? '-', r.executionStatus, ...(scheduled ? [r.scheduleId ?? '-'] : []), dateTime(new Date(r.startTime))]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n');
}

/** `agent fork`'s what-if options as `ForkEdits`; undefined with none. */
function forkEdits(o: { toolResult?: string[]; message?: string; model?: string; systemPrompt?: string }): ForkEdits | undefined {
  const toolResults: Record<string, string> = {};
  for (const pair of o.toolResult ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new InvalidAgentInputError(`--tool-result must be <toolCallId>=<text>, got ${JSON.stringify(pair)}`);
    toolResults[pair.slice(0, at)] = pair.slice(at + 1);
  }
  const edits: ForkEdits = {
    ...(Object.keys(toolResults).length > 0 ? { toolResults } : {}),
    ...(o.message !== undefined ? { message: o.message } : {}),
    ...(o.model !== undefined ? { model: o.model } : {}),
    ...(o.systemPrompt !== undefined ? { systemPrompt: o.systemPrompt } : {}),
  };
  return Object.keys(edits).length > 0 ? edits : undefined;
}
