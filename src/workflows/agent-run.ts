/**
 * The `agentRun` workflow: a thin interpreter of the run's definition (definition.ts), chosen once at its start. It
 * applies each event to the machine, runs the commands it returns (activities in `effects.ts`, the timer in
 * `run-timer.ts`), turns their outcomes into the next events, and publishes every state change (`publisher.ts`).
 * Every decision is the machine's.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  allHandlersFinished,
  continueAsNew,
  log,
  workflowInfo,
} from '@temporalio/workflow';
import { FailureType } from '../common/failures';
import { buildRunInputSchemas, parseAgentRunInput } from '../common/input';
import type { ReplayedAnswers } from '../common/chat';
import type { AgentRunResult } from '../common/messages';
import { AgentState, isTerminal } from '../common/states';
import { CANCELLED } from './effects';
import { setRunHandlers, setRunQueries } from './handlers';
import { critic, namesAgent, withAgent, withCritic } from './start-input';
import { awaitsMessage, isRunning, recordRejection, type AgentCommand, type AgentEvent, type WorkCommand } from '../machine/machine';
import { recordStateDuration } from './metrics';
import { chooseDefinition } from './definition';
import { carriedSnapshot, carryOn, carryOver, snapshotAt } from './resume';
import type { RunSnapshot } from '../machine/snapshot';
import { createStreamPublisher } from './stream';
import { resultOf, runResult } from './view';
import { endRunSpan, markRunSpan } from './genai';

const now = () => new Date().toISOString();

export async function agentRun(rawInput: unknown): Promise<AgentRunResult> {
  const { transition, initialSnapshot, blankSnapshot, resumeAt, createEffects, createPublisher, createRunTimer } = chooseDefinition();
  // Schemas built for this parse and dropped: a parked run does not keep them (common/input.ts).
  const parsed = parseAgentRunInput(rawInput, buildRunInputSchemas());
  let snapshot: RunSnapshot = parsed.ok ? initialSnapshot(parsed.value, now()) : blankSnapshot(now());
  // Time travel: the snapshot this run began from and every event applied since; any step is a fold away.
  let base = snapshot;
  const eventLog: Array<{ event: AgentEvent; at: string }> = [];
  // Before the first await: while a named agent resolves, queries see the run as its start's own fields make it.
  setRunQueries({ current: () => snapshot, at: (step) => snapshotAt(transition, base, eventLog, snapshot, step) });
  // Only a start that names an agent (its spec, from the worker) or a custom critic (that the worker has it) awaits
  // here; other runs keep their history unchanged.
  const started = namesAgent(rawInput) ? await withAgent(rawInput) : parsed;
  const judge = critic(started);
  const input = judge ? await withCritic(started, judge) : started;
  if (input !== parsed) snapshot = base = input.ok ? initialSnapshot(input.value, now()) : blankSnapshot(now());
  // The ids of the children its calls of named agents start begin with it.
  snapshot = { ...snapshot, workflowId: workflowInfo().workflowId };
  markRunSpan(snapshot, input.ok ? input.value.agent : undefined);
  const resumeInput = input.ok ? input.value.resume : undefined;
  // A what-if fork's recorded answers and edited tool results (a continued run's, those still unused).
  const effects = createEffects(
    { replay: resumeInput?.replay as ReplayedAnswers | undefined, toolResults: resumeInput?.edits?.toolResults },
    input.ok ? input.value.tenant : undefined,
    () => snapshot.options.timeouts,
    input.ok ? input.value.priority : undefined,
  );
  const publisher = createPublisher();
  let live = createStreamPublisher();
  const timer = createRunTimer(() => dispatch({ type: 'TIMEOUT' }, true));
  const queue: WorkCommand[] = [];

  /** Apply an event. External events (signals, updates, the timer) may be refused; the outcomes of work never are. */
  function dispatch(event: AgentEvent, external: boolean): void {
    const before = snapshot;
    const at = now();
    const result = transition(snapshot, event, at);
    if (!result.ok) {
      if (!external) throw new Error(`agentRun bug: ${result.error}`); // fails the workflow task, so a fix can resume it
      log.warn('event refused', { event: event.type, state: snapshot.phase.type, error: result.error });
      snapshot = recordRejection(snapshot, event, result.error, at);
      return;
    }
    snapshot = result.snapshot;
    eventLog.push({ event, at });
    run(result.commands);
    // A parent paused (or resumed) while its children run pauses (or resumes) them.
    if (snapshot.pauseRequested !== before.pauseRequested) effects.pauseChildren(snapshot.pauseRequested);
    const steps = snapshot.counters.step > before.counters.step ? snapshot.logs.transitions.slice(before.counters.step - snapshot.counters.step) : [];
    if (steps.length > 0) publisher.stepped(before.counters.step + 1, steps);
    const changes = steps.filter((t) => t.from !== t.to);
    changes.forEach((t, i) => recordStateDuration(t.from, i === 0 ? before.stateSince : changes[i - 1].at, t.at));
    // A signal or update may move a run that waits on an activity (pause, abort): shown now, not after the call.
    if (changes.length > 0) publisher.transitioned(snapshot, changes, external);
    // An approval reminder takes no step: the state stays, only the view has it.
    if (snapshot.counters.step !== before.counters.step || snapshot.clocks.approvalReminder !== before.clocks.approvalReminder) live.stepped(snapshot);
  }

  /** The timer and cancellation at once; work in turn, by the loop below. */
  function run(commands: AgentCommand[]): void {
    for (const command of commands) {
      if (command.type === 'timer') timer.set(command.due);
      else if (command.type === 'cancelWork') effects.cancel();
      else if (command.type === 'interruptTools') effects.interruptTools();
      else queue.push(command);
    }
  }

  // Signals and updates sent before now were held by the SDK, and reach the machine here, before START, as ever.
  setRunHandlers({
    current: () => snapshot,
    dispatch: (event) => dispatch(event, true),
    cut: () => effects.cut(),
    refuse: (event, error) => (snapshot = recordRejection(snapshot, event, error, now())),
    transition,
  });

  if (!input.ok) {
    dispatch({ type: 'INVALID_INPUT', error: input.error }, false);
    publisher.beforeWait(snapshot);
    publisher.ended(resultOf(snapshot));
    throw ApplicationFailure.create({ type: FailureType.InvalidInput, message: input.error, nonRetryable: true });
  }
  const resume = input.value.resume;
  const carried = resume && carriedSnapshot(resume);
  if (carried && isTerminal(carried.phase.type)) {
    const error = `cannot carry on from a ${carried.phase.type} snapshot`;
    publisher.ended({ ...resultOf(snapshot), status: AgentState.FAILED, reason: error });
    throw ApplicationFailure.create({ type: FailureType.InvalidInput, message: error, nonRetryable: true });
  }
  if (resume && carried) {
    const carriedOn = carryOn(resume, carried, workflowInfo().workflowId, now());
    // A fork starts its own children: their ids begin with its own id.
    const resumed = resumeAt({ ...carriedOn, workflowId: workflowInfo().workflowId }, now());
    // A continued run's stream already has what it carries; a fork's stream is new.
    if (resume.kind === 'continue') live = createStreamPublisher(carried);
    snapshot = base = resumed.snapshot;
    live.stepped(snapshot);
    run(resumed.commands);
  } else {
    dispatch({ type: 'START' }, false);
  }

  const root = CancellationScope.current();
  try {
    while (isRunning(snapshot)) {
      const command = queue.shift();
      if (!command) {
        publisher.beforeWait(snapshot);
        await condition(() => queue.length > 0 || !isRunning(snapshot));
        continue;
      }
      if (command.type === 'callModel' && historyIsLong()) {
        // A model step is a safe boundary: nothing is in flight, and the new run starts this very call.
        await condition(allHandlersFinished);
        const whatIf = effects.whatIfLeft();
        const carried = { ...(whatIf?.replay ? { replay: whatIf.replay } : {}), ...(whatIf?.toolResults ? { edits: { toolResults: whatIf.toolResults } } : {}) };
        await continueAsNew<typeof agentRun>({ ...input.value, resume: { kind: 'continue', snapshot: carryOver(snapshot), ...carried } });
      }
      const step = snapshot.counters.step;
      if (effects.waits(command)) publisher.beforeWait(snapshot);
      const event = command.type === 'awaitMessage' ? await awaitMessage(command.ms) : (effects.ready(command) ?? (await effects.run(command)));
      // An outcome that arrives after an abort or timeout moved the run on describes nothing any more.
      if (event !== CANCELLED && snapshot.counters.step === step) dispatch(event, false);
    }
  } catch (err) {
    if (!(isCancellation(err) && root.consideredCancelled)) throw err;
    const cut = effects.lastCut();
    dispatch({ type: 'ABORT', reason: 'the workflow was cancelled', ...(cut ? { cut } : {}) }, true);
  } finally {
    timer.cancel();
    publisher.beforeWait(snapshot);
    endRunSpan(snapshot);
  }
  const result = resultOf(snapshot);
  publisher.ended(result);
  return runResult(snapshot, result);

  /** A kept-open conversation waits for a follow-up message, with no timeout running between turns. */
  async function awaitMessage(ms: number): Promise<AgentEvent | typeof CANCELLED> {
    publisher.beforeWait(snapshot);
    if (!(await condition(() => !awaitsMessage(snapshot), ms))) return { type: 'CLOSE' };
    return CANCELLED;
  }

  function historyIsLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= snapshot.limits.historyEvents;
  }
}
