import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelResponse, ToolCall } from '../src/common/chat';
import { parseAgentRunInput, type AgentRunInput } from '../src/common/input';
import { ruleCritique } from '../src/machine/critic';
import { ALL_STEPS_DONE } from '../src/machine/critique';
import { planRetryInstruction } from '../src/machine/plan';
import { currentDetails, modelRequest } from '../src/machine/requests';
import { findRepetition, toolSignature } from '../src/machine/guards';
import {
  APPROVAL_NOTE_HEAD,
  approvalTimedOut,
  commandsFor,
  CONTINUE_PROMPT,
  freshClocks,
  CUT_TOOL_CALL,
  INTERRUPTED_APPROVAL,
  INTERRUPTED_MARK,
  INTERRUPTED_TOOL,
  LOOP_WARNING,
  MAX_CONTINUATIONS,
  resumeAt,
  ROWS,
  rowTracer,
  ALWAYS_ROWS,
  matchRow,
  TOOL_RETRY_NOTE,
  timerDue,
  transition,
  allowedTargets,
  transitionTable,
  wrapUpNote,
  type AgentCommand,
  type AgentEvent,
  type AgentEventType,
} from '../src/machine/machine';
import { carriedSnapshot, carryOn } from '../src/workflows/resume';
import { workDeadline } from '../src/machine/clocks';
import { initialSnapshot, loadSnapshot, readSnapshot, type Phase, type RunSnapshot } from '../src/machine/snapshot';
import { RunSnapshotSchema } from '../src/machine/snapshot-schema';
import { RunStateViewSchema } from '../src/common/view';
import { undocumented } from './support/documented-state';
import { publicView, runResult } from '../src/workflows/view';
import { openApiDocument } from '../src/gateway/openapi';
import { AgentState, isTerminal, type CritiqueAction } from '../src/common/states';

// Every row and eventless row any test below fires, for the walk of the table at the end of this file.
const firedRows = new Set<unknown>();
const firedEntries = new Set<string>();
beforeAll(() => {
  rowTracer.row = (r) => firedRows.add(r);
  rowTracer.always = (r, state) => firedEntries.add(`${r.action.name} into ${state}`);
});
afterAll(() => {
  rowTracer.row = null;
  rowTracer.always = null;
});

const T0 = '2026-01-01T00:00:00.000Z';
const at = (n: number) => new Date(Date.parse(T0) + n * 1000).toISOString();

function snapshot(input: Partial<AgentRunInput> = {}): RunSnapshot {
  const parsed = parseAgentRunInput({ prompt: 'do the task', ...input });
  if (!parsed.ok) throw new Error(parsed.error);
  return initialSnapshot(parsed.value, T0);
}

const call = (id: string, name = 'readFile', args: unknown = { path: 'a.txt' }): ToolCall => ({ id, name, arguments: JSON.stringify(args) });
const response = (text: string, toolCalls: ToolCall[] = []): ModelResponse => ({
  text,
  toolCalls,
  usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
  finishReason: toolCalls.length ? 'tool_calls' : 'stop',
  model: 'm',
});

const view = (s: RunSnapshot) => publicView(s, false);

/** Apply events in order, failing the test on any rejection. */
function run(s: RunSnapshot, ...events: AgentEvent[]): RunSnapshot {
  events.forEach((e, i) => {
    const r = transition(s, e, at(i + 1));
    if (!r.ok) throw new Error(r.error);
    s = r.snapshot;
  });
  return s;
}

function step(s: RunSnapshot, e: AgentEvent, when = at(99)) {
  const r = transition(s, e, when);
  if (!r.ok) throw new Error(r.error);
  return r;
}

/** A run whose final answers a model critic judges: CRITIQUE waits for the CRITIQUE_DONE a test sends. */
const judged = (input: Partial<AgentRunInput> = {}) => snapshot({ critique: 'model', ...input });

/** The work commands, in the few fields a test compares (the timer is checked on its own). */
function work(commands: AgentCommand[]): unknown[] {
  return commands.flatMap((c): unknown[] => {
    switch (c.type) {
      case 'timer':
        return [];
      case 'callModel':
        return [{ type: c.type, purpose: c.request.purpose, callNumber: c.request.callNumber }];
      case 'runTools':
        return [{ type: c.type, calls: c.requests.map((r) => r.call) }];
      case 'compact':
        return [{ type: c.type, keepRecent: c.request.keepRecent }];
      case 'critique':
        return [{ type: c.type, callNumber: c.request.callNumber }];
      default:
        return [c];
    }
  });
}

const STATES = Object.values(AgentState);
/** Every event the table names for any state: derived from the code, so a new event is in the table tests at once. */
const EVENT_TYPES = [...new Set(Object.values(transitionTable()).flatMap((targets) => Object.keys(targets)))] as AgentEventType[];

/** A snapshot sitting in `state` with the context that state implies. */
function snapshotIn(state: AgentState): RunSnapshot {
  const base = snapshot({ approval: { tools: ['writeFile'] } });
  const pending = [{ toolCallId: 'c1', kind: 'tool' as const, name: 'writeFile', arguments: '{}' }];
  const phases: Partial<Record<AgentState, Phase>> = {
    AWAITING_APPROVAL: { type: 'AWAITING_APPROVAL', pending, then: { type: 'TOOL_EXECUTING' } },
    PAUSED: { type: 'PAUSED', resumeTo: { type: 'STREAMING' } },
    COMPACTING: { type: 'COMPACTING', returnTo: 'STREAMING' },
    COMPLETED: { type: 'COMPLETED', conversationOpen: true },
  };
  const phase = phases[state] ?? ({ type: state } as Phase);
  const extra: Partial<RunSnapshot> = {
    AWAITING_APPROVAL: { toolRound: { ...base.toolRound, pending: [call('c1', 'writeFile')] } },
    STREAMING: { stream: { callNumber: 1, attempt: 1 }, counters: { ...base.counters, loops: 1 } },
    PLANNING: { stream: { callNumber: 1, attempt: 1 }, counters: { ...base.counters, loops: 1 } },
  }[state as string] ?? {};
  // The working-time clock runs in working states; while a person decides it waits, and an approval wait has its own.
  const stopped = { ...base.clocks, work: { state: 'stopped' as const, remainingMs: 300_000 } };
  const clocks: Partial<RunSnapshot> =
    state === AgentState.AWAITING_APPROVAL
      ? { clocks: { ...stopped, approvalDeadline: at(0) }, limits: { ...base.limits, approvalTimeoutMs: 60_000 } }
      : state === AgentState.PAUSED
        ? { clocks: stopped }
        : { clocks: { ...base.clocks, work: { state: 'running', deadline: at(300) } } };
  // RESUME outside PAUSED needs a pending pause request to cancel.
  return { ...base, ...extra, ...clocks, phase, pauseRequested: state !== AgentState.PAUSED };
}

function sampleEvent(type: AgentEventType): AgentEvent {
  switch (type) {
    case 'PLAN_READY':
    case 'MODEL_RESPONDED':
      return { type, response: response('ok') };
    case 'MODEL_FAILED':
    case 'MODEL_UNAVAILABLE':
    case 'UNKNOWN_TOOLS':
    case 'CRITIC_FAILED':
    case 'CONTEXT_OVERFLOW':
    case 'CHAIN_UNAVAILABLE':
    case 'COMPACTION_FAILED':
    case 'INVALID_INPUT':
      return { type, error: 'boom' };
    case 'TOOLS_DONE':
      return { type, results: [] };
    case 'CRITIQUE_DONE':
      return { type, decision: { action: 'continue', reason: 'r', confidence: 100 } };
    case 'COMPACTED':
      return { type, result: { messages: [], summarizedMessages: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } } };
    case 'APPROVAL':
      return { type, toolCallId: 'c1', approved: true };
    case 'ABORT':
      return { type, reason: 'stop' };
    case 'MESSAGE':
    case 'INTERRUPT':
      return { type, text: 'hi' };
    case 'QUOTA_WAIT':
      return { type, waitMs: 1_000, position: 2, queuedAt: 1 };
    default:
      return { type } as AgentEvent;
  }
}

describe('transition table', () => {
  const cases = STATES.flatMap((state) => EVENT_TYPES.map((type) => ({ state, type, targets: transitionTable()[state][type] ?? [] })));

  test('the targets a run checks, worked out per state and event, are the table\'s; an Object.prototype name has none', () => {
    for (const { state, type, targets } of cases) expect([...allowedTargets(state, type)].sort()).toEqual([...targets].sort());
    expect(allowedTargets(AgentState.IDLE, 'constructor' as AgentEventType)).toEqual([]);
    expect(allowedTargets('constructor' as AgentState, 'START')).toEqual([]);
  });

  test.each(cases.filter((c) => c.targets.length > 0))('$state accepts $type', ({ state, type, targets }) => {
    // PAUSED takes TIMEOUT when it has paused too long (limits.maxPausedMs).
    const s = state === AgentState.PAUSED && type === 'TIMEOUT' ? { ...snapshotIn(state), clocks: { ...snapshotIn(state).clocks, pausedDeadline: at(0) } } : snapshotIn(state);
    const r = transition({ ...s, pauseRequested: type === 'PAUSE' ? false : s.pauseRequested }, sampleEvent(type), at(1));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    // The event's own step is the first new one; internal steps (processing, the rule critic) may follow it.
    const first = r.snapshot.logs.transitions[s.logs.transitions.length];
    if (first?.event === type) {
      expect(first).toEqual({ from: state, to: first.to, event: type, at: at(1) });
      expect(targets).toContain(first.to);
    } else {
      // The event kept the state (a request recorded); internal steps may go on from there.
      expect(targets).toContain(state);
      expect(first?.from ?? r.snapshot.phase.type).toBe(state);
    }
  });

  test.each(cases.filter((c) => c.targets.length === 0))('$state rejects $type', ({ state, type }) => {
    const r = transition(snapshotIn(state), sampleEvent(type), at(1));
    const error = isTerminal(state)
      ? `the run has ended (${state})`
      : type === 'APPROVAL'
        ? `the run is ${state}, not AWAITING_APPROVAL`
        : `event ${type} has no transition from state ${state}`;
    expect(r).toEqual({ ok: false, error });
  });

  test('failed and aborted runs accept nothing; a completed one only a follow-up message or the close of its window', () => {
    expect(Object.keys(transitionTable().FAILED)).toEqual([]);
    expect(Object.keys(transitionTable().ABORTED)).toEqual([]);
    expect(Object.keys(transitionTable().COMPLETED).sort()).toEqual(['CLOSE', 'INTERRUPT', 'MESSAGE']);
    expect(isTerminal(AgentState.COMPLETED)).toBe(true);
  });
});

describe('a run through the machine', () => {
  test('start goes to STREAMING and asks for a model call; PLANNING first when planning is on', () => {
    const r = step(snapshot(), { type: 'START' });
    expect(r.snapshot.phase.type).toBe('STREAMING');
    expect(r.commands).toEqual([
      { type: 'timer', due: at(99 + 300) },
      { type: 'callModel', request: { ...modelRequest(r.snapshot, 'respond', 1), chain: {} } },
    ]);
    const p = step(snapshot({ plan: true }), { type: 'START' });
    expect(p.snapshot.phase.type).toBe('PLANNING');
    expect(work(p.commands)).toEqual([{ type: 'callModel', purpose: 'plan', callNumber: 1 }]);
    const planned = step(p.snapshot, { type: 'PLAN_READY', response: response('1. look\n2. answer') });
    expect(planned.snapshot.plan).toBe('1. look\n2. answer');
    expect(planned.snapshot.phase.type).toBe('STREAMING');
    expect(work(planned.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 2 }]);
  });

  describe("a structured plan (plan: 'steps')", () => {
    const stepsJson = (...steps: string[]) => JSON.stringify({ steps });
    const ok = (id: string): AgentEvent => ({ type: 'TOOLS_DONE', results: [{ toolCallId: id, name: 'readFile', ok: true, content: 'x' }] });
    const failed = (id: string): AgentEvent => ({ type: 'TOOLS_DONE', results: [{ toolCallId: id, name: 'readFile', ok: false, content: 'no such file' }] });
    const statuses = (s: RunSnapshot) => s.planSteps?.map((p) => `${p.title}:${p.status}${p.attempts ? `+${p.attempts}` : ''}`);

    test('the planner is asked for JSON steps; a plan of 3 steps moves to all done as the critique lets each go on', () => {
      const p = step(snapshot({ plan: 'steps' }), { type: 'START' });
      expect(p.snapshot.options).toMatchObject({ plan: true, planSteps: true });
      const [ask] = p.commands.filter((c) => c.type === 'callModel');
      expect(ask.type === 'callModel' && ask.request.messages.at(-1)?.content).toContain('Reply with JSON only');
      const planned = step(p.snapshot, { type: 'PLAN_READY', response: response('```json\n' + stepsJson('list', 'read', 'answer') + '\n```') });
      let s = planned.snapshot;
      expect(s.phase.type).toBe('STREAMING');
      expect(s.plan).toBe('1. list\n2. read\n3. answer');
      expect(statuses(s)).toEqual(['list:active', 'read:pending', 'answer:pending']);
      expect(view(s)).toMatchObject({ planProgress: { done: 0, total: 3, allDone: false } });
      s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) }, ok('c1'));
      expect(statuses(s)).toEqual(['list:done', 'read:active', 'answer:pending']);
      s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c2')]) }, ok('c2'));
      expect(statuses(s)).toEqual(['list:done', 'read:done', 'answer:active']);
      const end = run(s, { type: 'MODEL_RESPONDED', response: response('the answer') });
      expect(end.phase.type).toBe('COMPLETED');
      expect(statuses(end)).toEqual(['list:done', 'read:done', 'answer:done']);
      expect(view(end)).toMatchObject({ planProgress: { done: 3, total: 3, allDone: true } });
    });

    test('the run tells the model once the critique has ended the last step', () => {
      let s = run(snapshot({ plan: 'steps' }), { type: 'START' }, { type: 'PLAN_READY', response: response(stepsJson('read the file')) });
      s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) }, ok('c1'));
      expect(view(s).planProgress).toEqual({ done: 1, total: 1, allDone: true });
      expect(s.messages.at(-1)).toEqual({ role: 'user', content: ALL_STEPS_DONE });
    });

    test('a malformed plan is asked for again once, with what was wrong; a second malformed answer is taken as text', () => {
      const p = run(snapshot({ plan: 'steps' }), { type: 'START' });
      const again = step(p, { type: 'PLAN_READY', response: response('First I will look around, then answer.') });
      expect(again.snapshot.phase.type).toBe('PLANNING');
      expect(again.snapshot.planRetry).toEqual({ answer: 'First I will look around, then answer.', error: 'the answer is not JSON' });
      const [ask] = again.commands.filter((c) => c.type === 'callModel');
      expect(ask.type === 'callModel' && [ask.request.callNumber, ...ask.request.messages.slice(-2).map((m) => m.content)]).toEqual([
        2,
        'First I will look around, then answer.',
        planRetryInstruction('the answer is not JSON'),
      ]);
      // Well-formed the second time: steps, and the re-ask is forgotten.
      const fixed = step(again.snapshot, { type: 'PLAN_READY', response: response(stepsJson('look', 'answer')) }).snapshot;
      expect([fixed.phase.type, statuses(fixed), fixed.planRetry]).toEqual(['STREAMING', ['look:active', 'answer:pending'], undefined]);
      // Schema-checked, not only JSON: an empty list fails it too; malformed again, the text is the plan.
      const empty = step(p, { type: 'PLAN_READY', response: response('{"steps": []}') }).snapshot;
      expect(empty.planRetry?.error).toBe('a plan needs at least one step at steps');
      const text = step(empty, { type: 'PLAN_READY', response: response('just do it') }).snapshot;
      expect([text.phase.type, text.plan, text.planSteps, text.planRetry]).toEqual(['STREAMING', 'just do it', undefined, undefined]);
    });

    test('a rejected step is retried, then replanned: the new plan replaces the steps not begun', () => {
      let s = run(snapshot({ plan: 'steps' }), { type: 'START' }, { type: 'PLAN_READY', response: response(stepsJson('read a', 'read b', 'answer')) });
      s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) }, failed('c1'));
      expect(s.lastCritique?.action).toBe('retry');
      expect(statuses(s)).toEqual(['read a:retried+1', 'read b:pending', 'answer:pending']);
      s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c2')]) }, failed('c2'));
      expect(s.lastCritique?.action).toBe('replan');
      expect(s.phase.type).toBe('PLANNING');
      expect(statuses(s)).toEqual(['read a:replanned+1', 'read b:pending', 'answer:pending']);
      s = run(s, { type: 'PLAN_READY', response: response(stepsJson('read c', 'answer')) });
      expect(statuses(s)).toEqual(['read a:replanned+1', 'read c:active', 'answer:pending']);
      expect(view(s).planProgress).toEqual({ done: 0, total: 2, allDone: false });
    });

    test('a free-text plan (plan: true) keeps no steps, whatever its answer looks like', () => {
      const s = run(snapshot({ plan: true }), { type: 'START' }, { type: 'PLAN_READY', response: response('not json at all') });
      expect([s.phase.type, s.plan, s.planSteps, s.options.planSteps]).toEqual(['STREAMING', 'not json at all', undefined, undefined]);
      expect(view(s)).toMatchObject({ planSteps: null, planProgress: null });
    });
  });

  test('tool calls are processed, executed, critiqued and fed back to the model; pure steps inside one transition', () => {
    let s = run(snapshot(), { type: 'START' });
    const processed = step(s, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) });
    // Processing the response needs no effect: the transition goes on to the tools and asks only for them.
    expect(processed.snapshot.phase.type).toBe('TOOL_EXECUTING');
    expect(processed.snapshot.logs.transitions.slice(-2).map((t) => [t.from, t.to, t.event])).toEqual([
      ['STREAMING', 'PROCESSING', 'MODEL_RESPONDED'],
      ['PROCESSING', 'TOOL_EXECUTING', 'PROCESS'],
    ]);
    expect(processed.commands).toEqual([{ type: 'runTools', requests: [{ call: call('c1'), callNumber: 1 }] }]);
    // The rule critic judges tool outcomes in the same transition: the next command is the model call.
    const done = step(processed.snapshot, { type: 'TOOLS_DONE', results: [{ toolCallId: 'c1', name: 'readFile', ok: true, content: 'hello' }] });
    s = done.snapshot;
    expect(s.phase.type).toBe('STREAMING');
    expect(s.lastCritique).toMatchObject({ action: 'continue' });
    expect(s.counters.toolCalls).toBe(1);
    expect(s.messages.at(-1)).toEqual({ role: 'tool', toolCallId: 'c1', content: 'hello' });
    expect(work(done.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 2 }]);
    const end = step(s, { type: 'MODEL_RESPONDED', response: response('done') });
    expect(end.snapshot.phase.type).toBe('COMPLETED');
    expect(end.snapshot.answer).toBe('done');
    expect(end.snapshot.usage).toEqual({ promptTokens: 20, completionTokens: 10, totalTokens: 30, modelCalls: 2, costUsd: 0 }); // model m has no price
    expect(end.snapshot.logs.transitions.map((t) => t.to)).toEqual([
      'STREAMING', 'PROCESSING', 'TOOL_EXECUTING', 'CRITIQUE', 'STREAMING', 'PROCESSING', 'CRITIQUE', 'COMPLETED',
    ]);
  });

  test.each<[CritiqueAction, AgentState]>([
    ['continue', 'STREAMING'],
    ['retry', 'STREAMING'],
    ['replan', 'PLANNING'],
    ['complete', 'COMPLETED'],
  ])('critique %s leads to %s', (action, expected) => {
    const s = run(judged(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('an answer') });
    expect(s.phase.type).toBe('CRITIQUE');
    expect(step(s, { type: 'CRITIQUE_DONE', decision: { action, reason: 'because', confidence: 50 } }).snapshot.phase.type).toBe(expected);
  });

  test('a message sent during the run is answered before the run completes', () => {
    let s = run(judged(), { type: 'START' }, { type: 'MESSAGE', text: 'also this' }, { type: 'MODEL_RESPONDED', response: response('first') });
    s = step(s, { type: 'CRITIQUE_DONE', decision: { action: 'complete', reason: 'r', confidence: 100 } }).snapshot;
    expect(s.phase.type).toBe('STREAMING');
    expect(s.messages.at(-1)).toEqual({ role: 'user', content: 'also this' });
    expect(s.queuedMessages).toEqual([]);
  });

  test('the loop guard warns the model once, then ends the run naming the repeated call', () => {
    let s = run(snapshot(), { type: 'START' });
    for (let i = 1; i <= 2; i++) {
      s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call(`c${i}`)]) });
      expect(s.phase.type).toBe('TOOL_EXECUTING');
      s = run(s, { type: 'TOOLS_DONE', results: [{ toolCallId: `c${i}`, name: 'readFile', ok: true, content: 'x' }] });
    }
    s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c3')]) });
    expect(s.phase.type).toBe('STREAMING');
    expect(s.loopWarned).toBe(true);
    expect(s.messages.at(-1)).toEqual({ role: 'tool', toolCallId: 'c3', content: LOOP_WARNING });
    expect(s.counters.toolCalls).toBe(2);
    s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c4')]) });
    expect(s.phase.type).toBe('FAILED');
    expect(s.reason?.text).toBe('loop detected: readFile({"path":"a.txt"}) called 4 times in a row');
  });

  test("limits.onLimit 'complete' ends a run at maxLoops or maxToolCalls COMPLETED with its last text, naming the limit", () => {
    let s = run(snapshot({ limits: { maxLoops: 2, onLimit: 'complete' } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('') });
    const r = step(s, { type: 'MODEL_RESPONDED', response: response('') });
    s = run(snapshot({ limits: { maxLoops: 2, onLimit: 'complete' } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('draft one', [call('a')]) }, { type: 'TOOLS_DONE', results: [{ toolCallId: 'a', name: 'readFile', ok: true, content: 'x' }] });
    s = run(s, { type: 'MODEL_RESPONDED', response: response('draft two', [call('b', 'readFile', { path: 'b' })]) });
    const loops = step(s, { type: 'TOOLS_DONE', results: [{ toolCallId: 'b', name: 'readFile', ok: true, content: 'y' }] });
    expect([loops.snapshot.phase.type, loops.snapshot.answer, loops.snapshot.reason?.text]).toEqual([
      'COMPLETED',
      'draft two',
      'loop limit reached: 2 model calls, limits.maxLoops is 2: completed with the last text (limits.onLimit is complete)',
    ]);
    expect(r.snapshot.phase.type).toBe('COMPLETED');
    const calls = [call('a', 'readFile', { path: '1' }), call('b', 'readFile', { path: '2' })];
    const tools = run(snapshot({ limits: { maxToolCalls: 1, onLimit: 'complete' } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('reading both', calls) });
    expect([tools.phase.type, tools.answer, tools.reason?.text]).toEqual(['COMPLETED', 'reading both', 'tool call limit reached: 0 done, 2 more requested, limits.maxToolCalls is 1: completed with the last text (limits.onLimit is complete)']);
    // The calls left unrun are answered, so a follow-up turn sends a well-formed conversation.
    expect(tools.messages.filter((m) => m.role === 'tool').map((m) => m.toolCallId)).toEqual(['a', 'b']);
    expect(runResult(tools)).toMatchObject({ status: 'COMPLETED', answer: 'reading both' });
  });

  test('maxLoops ends the run before the model call that would exceed it', () => {
    let s = run(snapshot({ limits: { maxLoops: 2 } }), { type: 'START' });
    s = run(s, { type: 'MODEL_RESPONDED', response: response('') }); // the rule critic sends an empty answer back
    expect([s.phase.type, s.counters.loops]).toEqual(['STREAMING', 2]);
    const r = step(s, { type: 'MODEL_RESPONDED', response: response('') });
    expect(r.snapshot.phase.type).toBe('FAILED');
    expect(r.snapshot.reason?.text).toBe('loop limit reached: 2 model calls, limits.maxLoops is 2');
    expect(r.commands).toEqual([{ type: 'timer', due: null }, { type: 'cancelWork' }]);
  });

  test('the no-progress guard ends a run whose critic keeps asking for another attempt', () => {
    const retry = { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'still wrong', confidence: 60 } } as const;
    const attempt = (s: RunSnapshot) => run(s, { type: 'MODEL_RESPONDED', response: response('maybe') }, retry);
    let s = run(judged(), { type: 'START' });
    for (let i = 1; i <= 3; i++) s = attempt(s);
    expect([s.phase.type, s.counters.setbacksInARow]).toEqual(['STREAMING', 3]);
    s = attempt(s);
    expect(s.phase.type).toBe('FAILED');
    expect(s.reason?.text).toBe('no progress: the critic asked for another attempt 4 times in a row (last: retry, still wrong)');
  });

  test('a step forward resets the no-progress count', () => {
    let s = run(judged(), { type: 'START' });
    const retry = { type: 'CRITIQUE_DONE', decision: { action: 'replan', reason: 'r', confidence: 50 } } as const;
    s = run(s, { type: 'MODEL_RESPONDED', response: response('a') }, retry, { type: 'PLAN_READY', response: response('plan') });
    s = run(s, { type: 'MODEL_RESPONDED', response: response('b') }, { type: 'CRITIQUE_DONE', decision: { action: 'continue', reason: 'ok', confidence: 100 } });
    expect(s.counters.setbacksInARow).toBe(0);
  });

  test('maxToolCalls ends the run when a response asks for more calls than remain', () => {
    const calls = [call('a', 'readFile', { path: '1' }), call('b', 'readFile', { path: '2' })];
    const s = run(snapshot({ limits: { maxToolCalls: 1 } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', calls) });
    expect(s.phase.type).toBe('FAILED');
    expect(s.reason?.text).toBe('tool call limit reached: 0 done, 2 more requested, limits.maxToolCalls is 1');
  });

  test('guarded tools wait for every approval; a rejection goes back to the model', () => {
    const calls = [call('w1', 'writeFile', { path: 'x', content: '1' }), call('w2', 'writeFile', { path: 'y', content: '2' }), call('r1')];
    let s = run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', calls) });
    expect(s.phase.type).toBe('AWAITING_APPROVAL');
    expect(view(s).pendingApproval.map((p) => [p.toolCallId, p.kind])).toEqual([['w1', 'tool'], ['w2', 'tool']]);
    expect(transition(s, { type: 'APPROVAL', toolCallId: 'nope', approved: true }, at(1))).toEqual({ ok: false, error: 'toolCallId nope is not waiting for approval (waiting: w1, w2)' });
    s = run(s, { type: 'APPROVAL', toolCallId: 'w1', approved: true });
    expect(s.phase.type).toBe('AWAITING_APPROVAL');
    expect(transition(s, { type: 'APPROVAL', toolCallId: 'w1', approved: false }, at(1)).ok).toBe(false);
    const r = step(s, { type: 'APPROVAL', toolCallId: 'w2', approved: false, feedback: 'not there' });
    expect(r.snapshot.phase.type).toBe('TOOL_EXECUTING');
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: [calls[0], calls[2]] }]);
    s = run(r.snapshot, {
      type: 'TOOLS_DONE',
      results: [
        { toolCallId: 'r1', name: 'readFile', ok: true, content: 'r' },
        { toolCallId: 'w1', name: 'writeFile', ok: true, content: 'w' },
      ],
    });
    expect(s.messages.slice(-4)).toEqual([
      { role: 'tool', toolCallId: 'w1', content: 'w' },
      { role: 'tool', toolCallId: 'w2', content: 'The user rejected this call.' },
      { role: 'tool', toolCallId: 'r1', content: 'r' },
      { role: 'user', content: `${APPROVAL_NOTE_HEAD}\n- writeFile (call w2): rejected. Feedback: not there` },
    ]);
    expect(s.counters.toolCalls).toBe(2);
  });

  test('pause takes effect on the way into new work and resume continues there', () => {
    let s = run(snapshot(), { type: 'START' }, { type: 'PAUSE' });
    expect(s.phase.type).toBe('STREAMING');
    expect(transition(s, { type: 'PAUSE' }, at(1))).toEqual({ ok: false, error: 'a pause is already requested' });
    s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) });
    expect(s.phase.type).toBe('PAUSED');
    expect(s.phase).toEqual({ type: 'PAUSED', resumeTo: { type: 'TOOL_EXECUTING' } });
    expect(transition(s, { type: 'PAUSE' }, at(1)).ok).toBe(false);
    const r = step(s, { type: 'RESUME' });
    expect(r.snapshot.phase.type).toBe('TOOL_EXECUTING');
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: [call('c1')] }]);
    expect(transition(r.snapshot, { type: 'RESUME' }, at(1))).toEqual({ ok: false, error: 'the run is TOOL_EXECUTING, not paused' });
  });

  test('a pause request can be withdrawn before it takes effect', () => {
    const s = run(snapshot(), { type: 'START' }, { type: 'PAUSE' }, { type: 'RESUME' }, { type: 'MODEL_RESPONDED', response: response('x') });
    expect([s.phase.type, s.answer]).toEqual(['COMPLETED', 'x']);
  });

  test('context overflow compacts and returns to the model step; repeated overflow fails', () => {
    let s = run(snapshot(), { type: 'START' });
    const r = step(s, { type: 'CONTEXT_OVERFLOW', error: 'too long' });
    expect(r.snapshot.phase.type).toBe('COMPACTING');
    expect(work(r.commands)).toEqual([{ type: 'compact', keepRecent: 6 }]);
    const summary = [{ role: 'user' as const, content: 'summary' }];
    const back = step(r.snapshot, { type: 'COMPACTED', result: { messages: summary, summarizedMessages: 4, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } } });
    expect(back.snapshot.phase.type).toBe('STREAMING');
    expect(back.snapshot.messages).toEqual(summary);
    expect(work(back.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 2 }]);
    s = back.snapshot;
    s = run(s, { type: 'CONTEXT_OVERFLOW', error: 'still' }, { type: 'COMPACTED', result: { messages: summary, summarizedMessages: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } } });
    s = run(s, { type: 'CONTEXT_OVERFLOW', error: 'again' });
    expect(s.phase.type).toBe('FAILED');
    expect(s.reason?.text).toBe('context still too long after 2 compactions: again');
  });

  test('abort and timeout end any running state and cancel its work', () => {
    for (const state of STATES.filter((st) => !isTerminal(st))) {
      const aborted = step(snapshotIn(state), { type: 'ABORT', reason: 'user said so' });
      expect(aborted.snapshot.phase.type).toBe('ABORTED');
      expect(aborted.snapshot.reason?.text).toBe('aborted: user said so');
      // The timer stops with the run; a paused run has none running.
      const stopTimer = state === AgentState.PAUSED ? [] : [{ type: 'timer', due: null }];
      expect(aborted.commands).toEqual([...stopTimer, { type: 'cancelWork' }]);
      if (state === AgentState.PAUSED) {
        // No clock runs while paused: a late timer is refused.
        expect(transition(snapshotIn(state), { type: 'TIMEOUT' }, at(99))).toEqual({ ok: false, error: 'no timer is running: the run waits for a person' });
        continue;
      }
      const timedOut = step(snapshotIn(state), { type: 'TIMEOUT' });
      expect(timedOut.snapshot.phase.type).toBe('FAILED');
      expect(timedOut.snapshot.reason?.text).toBe(
        state === AgentState.AWAITING_APPROVAL
          ? 'no decision on writeFile within 60000 ms (limits.approvalTimeoutMs)'
          : 'timed out after 300000 ms of working time (limits.timeoutMs)',
      );
    }
  });

  test('the streamed text reaches the snapshot once: with the answer, or with the abort that cut its call short', () => {
    let s = run(judged(), { type: 'START' });
    expect([s.partialText, s.stream]).toEqual(['', { callNumber: 1, attempt: 1 }]);
    // A cut of another call than the one in flight describes nothing.
    expect(run(s, { type: 'ABORT', cut: { callNumber: 0, text: 'stale' } }).partialText).toBe('');
    expect(run(s, { type: 'ABORT', cut: { callNumber: 1, text: 'Hel' } }).partialText).toBe('Hel');
    s = run(s, { type: 'MODEL_RESPONDED', response: response('Hi there') });
    expect(s.partialText).toBe('Hi there'); // the whole text stays until the next call, so watchers see its tail
    s = run(s, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'r', confidence: 100 } });
    expect([s.phase.type, s.partialText, s.stream]).toEqual(['STREAMING', '', { callNumber: 2, attempt: 1 }]);
  });
});

describe('rule critic', () => {
  const base = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) });
  const done = (ok: boolean, failuresInARow = 0) => {
    const s = run(base, { type: 'TOOLS_DONE', results: [{ toolCallId: 'c1', name: 'readFile', ok, content: ok ? 'x' : 'Error: nope' }] });
    return failuresInARow ? { ...s, counters: { ...s.counters, failuresInARow } } : s;
  };
  test.each([
    { name: 'a tool succeeded', s: done(true), action: 'continue' },
    { name: 'a tool failed once', s: done(false), action: 'retry' },
    { name: 'tools failed on consecutive steps', s: done(false, 2), action: 'replan' },
  ])('$name -> $action', ({ s, action }) => expect(ruleCritique(s).action).toBe(action));

  test('an answer completes; an empty one is retried', () => {
    const answered = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('42') });
    expect(ruleCritique(answered)).toMatchObject({ action: 'complete' });
    const empty = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('  ') });
    expect(ruleCritique(empty)).toMatchObject({ action: 'retry', reason: 'the model returned an empty answer' });
  });
});

describe('repetition guard', () => {
  test.each<[string[], number, string[] | null]>([
    [['a', 'a', 'a'], 3, ['a']],
    [['a', 'a'], 3, null],
    [['b', 'a', 'a', 'a'], 3, ['a']],
    [['a', 'b', 'a', 'b', 'a', 'b'], 3, ['a', 'b']],
    [['a', 'b', 'a', 'b'], 3, null],
    [['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c'], 3, ['a', 'b', 'c']],
    [['a', 'b', 'c', 'd'], 2, null],
  ])('%j with %i repeats -> %j', (sigs, min, unit) => {
    expect(findRepetition(sigs, min)?.unit ?? null).toEqual(unit);
  });

  test('signatures ignore key order and spacing but not values', () => {
    expect(toolSignature({ name: 't', arguments: '{"b":1, "a":2}' })).toBe(toolSignature({ name: 't', arguments: '{"a":2,"b":1}' }));
    expect(toolSignature({ name: 't', arguments: '{"a":1}' })).not.toBe(toolSignature({ name: 't', arguments: '{"a":2}' }));
    expect(toolSignature({ name: 't', arguments: '{oops' })).toBe('t({oops)');
  });
});

describe('budgets', () => {
  const big = (n: number) => response('x', []) && { ...response('answer'), usage: { promptTokens: n, completionTokens: n, totalTokens: 2 * n } };

  test('a call that would exceed the token budget is not made; the run fails naming the budget', () => {
    let s = run(judged({ budget: { maxTokens: 3_000, reserveOutputTokens: 500 } }), { type: 'START' });
    expect(s.phase.type).toBe('STREAMING');
    s = run(s, { type: 'MODEL_RESPONDED', response: big(1_300) });
    const r = step(s, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'again', confidence: 100 } });
    expect(r.snapshot.phase.type).toBe('FAILED');
    expect(r.snapshot.reason?.text).toMatch(/^token budget exceeded: 2600 used \+ \d+ reserved for the next call > 3000 \(budget\.maxTokens\)$/);
    expect(r.snapshot.counters.loops).toBe(1);
  });

  test('with onExceed approve the run waits; approving extends the budget, declining ends the run', () => {
    let s = run(judged({ budget: { maxTokens: 3_000, reserveOutputTokens: 500, onExceed: 'approve' } }), { type: 'START' });
    s = run(s, { type: 'MODEL_RESPONDED', response: big(1_300) }, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'r', confidence: 100 } });
    expect(s.phase.type).toBe('AWAITING_APPROVAL');
    expect(s.phase).toEqual({
      type: 'AWAITING_APPROVAL',
      pending: [{ toolCallId: 'budget', kind: 'budget', name: 'budget', arguments: JSON.stringify({ reason: s.reason?.text }) }],
      then: { type: 'STREAMING' },
    });
    const approved = step(s, { type: 'APPROVAL', toolCallId: 'budget', approved: true });
    expect(approved.snapshot).toMatchObject({ phase: { type: 'STREAMING' }, counters: { budgetGrants: 1, loops: 2 } });
    expect(work(approved.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 2 }]);
    const declined = step(s, { type: 'APPROVAL', toolCallId: 'budget', approved: false, feedback: 'too dear' });
    expect(declined.snapshot.phase.type).toBe('FAILED');
    expect(declined.snapshot.reason?.text).toMatch(/extending the budget was declined: too dear$/);
  });

  test('cost is accounted by the price of the answering model; an unpriced model stops a cost budget', () => {
    const priced = { ...response('a'), model: 'scripted-x', usage: { promptTokens: 1_000_000, completionTokens: 500_000, totalTokens: 1_500_000 } };
    const s = run(snapshot({ budget: { maxCostUsd: 100 } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: priced });
    expect(s.usage.costUsd).toBeCloseTo(2); // 1M prompt at $1 + 0.5M completion at $2
    // Sums of binary fractions carry noise (0.0001 + 0.0002 is 0.00030000000000000003): the run's cost does not.
    const cents = { budget: { maxCostUsd: 100, prices: { tiny: { inputPerMTok: 100, outputPerMTok: 0 } } } };
    const tiny = (promptTokens: number) => ({ ...response('', [call(`c${promptTokens}`)]), model: 'tiny', usage: { promptTokens, completionTokens: 0, totalTokens: promptTokens } });
    const summed = run(snapshot({ ...cents, model: 'tiny' }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: tiny(1) }, { type: 'TOOLS_DONE', results: [{ toolCallId: 'c1', name: 'readFile', ok: true, content: 'x' }] }, { type: 'MODEL_RESPONDED', response: tiny(2) });
    expect(summed.usage.costUsd).toBe(0.0003);
    const unpriced = run(judged({ budget: { maxCostUsd: 100 } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: { ...response('a'), model: 'mystery-1' } });
    const r = step(unpriced, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'r', confidence: 100 } });
    expect(r.snapshot.reason?.text).toBe('no price for model mystery-1: add it to budget.prices');
  });
});

describe('an interrupting message', () => {
  const streaming = (partialText: string, input: Partial<AgentRunInput> = {}) => ({ ...run(snapshot(input), { type: 'START' }), partialText });
  const guarded = [call('w1', 'writeFile', { path: 'x', content: '1' }), call('w2', 'writeFile', { path: 'y', content: '2' }), call('r1')];
  const approving = () => run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', guarded) });
  const budgetWait = () => {
    const s = run(judged({ budget: { maxTokens: 3_000, reserveOutputTokens: 500, onExceed: 'approve' } }), { type: 'START' });
    const big = { ...response('x'.repeat(4 * 1_300)), usage: { promptTokens: 1_300, completionTokens: 1_300, totalTokens: 2_600 } };
    return run(s, { type: 'MODEL_RESPONDED', response: big }, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'r', confidence: 100 } });
  };
  const completed = (keepOpenMs: number) => run(snapshot({ keepOpenMs }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('done') });

  // Where it leads from each state a run can be in when a person sends it, and the work it starts.
  test.each<[string, () => RunSnapshot, AgentState, unknown[], number]>([
    ['STREAMING: the call cancelled and made again', () => streaming('Half an ans'), 'STREAMING', [{ type: 'cancelWork' }, { type: 'callModel', purpose: 'respond', callNumber: 2 }], 0],
    ['PLANNING: the plan made again', () => ({ ...run(snapshot({ plan: true }), { type: 'START' }), partialText: '1. look' }), 'PLANNING', [{ type: 'cancelWork' }, { type: 'callModel', purpose: 'plan', callNumber: 2 }], 0],
    ['STREAMING with a pause requested: paused, the call not made', () => ({ ...streaming('Half'), pauseRequested: true }), 'PAUSED', [{ type: 'cancelWork' }], 1],
    ['TOOL_EXECUTING: tools that may be stopped are', () => run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) }), 'TOOL_EXECUTING', [{ type: 'interruptTools' }], 1],
    ['AWAITING_APPROVAL: undecided calls rejected, the others run', approving, 'TOOL_EXECUTING', [{ type: 'runTools', calls: [guarded[2]] }], 1],
    ['AWAITING_APPROVAL for the budget: still waiting', budgetWait, 'AWAITING_APPROVAL', [], 1],
    ['PAUSED: queued', () => run(streaming(''), { type: 'PAUSE' }, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) }), 'PAUSED', [], 1],
    ['COMPLETED with the conversation open: a follow-up turn', () => completed(60_000), 'STREAMING', [{ type: 'callModel', purpose: 'respond', callNumber: 2 }], 0],
  ])('%s', (_name, before, expected, commands, queued) => {
    const s = before();
    const r = step(s, { type: 'INTERRUPT', text: 'stop: do Y instead' });
    expect(r.snapshot.phase.type).toBe(expected);
    expect(work(r.commands)).toEqual(commands);
    expect(r.snapshot.queuedMessages).toHaveLength(queued);
    expect(queued === 0 || r.snapshot.queuedMessages[0] === 'stop: do Y instead').toBe(true);
    // A step taken for it says so in the transition log.
    if (r.snapshot.counters.step > s.counters.step) expect(r.snapshot.logs.transitions[s.logs.transitions.length].event).toBe('INTERRUPT');
  });

  test('the text streamed so far stays, marked interrupted, and the next call carries it and the message', () => {
    const s = streaming('');
    // The interpreter hands over what the stopped call streamed (its cancellation's details).
    const r = step(s, { type: 'INTERRUPT', text: 'stop: do Y instead', cut: { callNumber: 1, text: 'Half an ans' } });
    const request = r.commands.find((c) => c.type === 'callModel');
    expect(request?.type === 'callModel' && request.request.messages.slice(-2)).toEqual([
      { role: 'assistant', content: `Half an ans${INTERRUPTED_MARK}`, interrupted: true },
      { role: 'user', content: 'stop: do Y instead' },
    ]);
    expect(r.snapshot).toMatchObject({ partialText: '', counters: { loops: 2 }, stream: { callNumber: 2, attempt: 1 } });
    expect(r.snapshot.logs.transitions.at(-1)).toMatchObject({ from: 'STREAMING', to: 'STREAMING', event: 'INTERRUPT' });
    // The text of another call is not this one's.
    const other = step(s, { type: 'INTERRUPT', text: 'stop', cut: { callNumber: 7, text: 'Other' } });
    expect(other.snapshot.messages.filter((m) => m.role === 'assistant')).toEqual([]);
    // Nothing streamed yet: no empty assistant turn.
    const early = step(streaming(''), { type: 'INTERRUPT', text: 'stop', cut: { callNumber: 1, text: '  ' } });
    expect(early.snapshot.messages.at(-1)).toEqual({ role: 'user', content: 'stop' });
    expect(early.snapshot.messages.filter((m) => m.role === 'assistant')).toEqual([]);
  });

  test('calls still waiting for approval are rejected as interrupted; decided ones keep their decision', () => {
    const s = run(approving(), { type: 'APPROVAL', toolCallId: 'w1', approved: true });
    const r = step(s, { type: 'INTERRUPT', text: 'never mind y' });
    expect(r.snapshot.phase.type).toBe('TOOL_EXECUTING');
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: [guarded[0], guarded[2]] }]);
    const done = run(r.snapshot, {
      type: 'TOOLS_DONE',
      results: [
        { toolCallId: 'w1', name: 'writeFile', ok: true, content: 'w' },
        { toolCallId: 'r1', name: 'readFile', ok: true, content: 'r' },
      ],
    });
    expect(done.phase.type).toBe('STREAMING');
    expect(done.messages.slice(-5)).toEqual([
      { role: 'tool', toolCallId: 'w1', content: 'w' },
      { role: 'tool', toolCallId: 'w2', content: 'The user rejected this call.' },
      { role: 'tool', toolCallId: 'r1', content: 'r' },
      { role: 'user', content: `${APPROVAL_NOTE_HEAD}\n- writeFile (call w2): rejected. Feedback: ${INTERRUPTED_APPROVAL}` },
      { role: 'user', content: 'never mind y' },
    ]);
  });

  test('while tools run the message waits for their results and goes with the next call; a stopped call is no failure', () => {
    const s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) }, { type: 'INTERRUPT', text: 'hurry' });
    const done = step(s, { type: 'TOOLS_DONE', results: [{ toolCallId: 'c1', name: 'readFile', ok: false, content: INTERRUPTED_TOOL, interrupted: true }] });
    expect(done.snapshot.phase.type).toBe('STREAMING');
    expect(done.snapshot.messages.slice(-2)).toEqual([{ role: 'tool', toolCallId: 'c1', content: INTERRUPTED_TOOL }, { role: 'user', content: 'hurry' }]);
    expect(done.snapshot).toMatchObject({ counters: { failuresInARow: 0, setbacksInARow: 0 }, lastCritique: { action: 'continue' } });
  });

  test('is refused by a closed conversation', () => {
    expect(transition(completed(0), { type: 'INTERRUPT', text: 'more' }, at(1))).toEqual({ ok: false, error: 'the conversation is closed' });
  });
});

describe('multi-turn', () => {
  test('a kept-open conversation takes a follow-up message after its answer, then closes', () => {
    const first = step(run(snapshot({ keepOpenMs: 60_000 }), { type: 'START' }), { type: 'MODEL_RESPONDED', response: response('first answer') });
    let s = first.snapshot;
    expect(view(s)).toMatchObject({ state: 'COMPLETED', answer: 'first answer', turns: 1, conversationOpen: true });
    expect(first.commands).toEqual([{ type: 'timer', due: null }, { type: 'cancelWork' }, { type: 'awaitMessage', ms: 60_000 }]);
    const next = step(s, { type: 'MESSAGE', text: 'and then?' });
    expect(view(next.snapshot)).toMatchObject({ state: 'STREAMING', conversationOpen: false, loops: 2 });
    expect(next.snapshot.messages.at(-1)).toEqual({ role: 'user', content: 'and then?' });
    s = run(next.snapshot, { type: 'MODEL_RESPONDED', response: response('second answer') }, { type: 'CLOSE' });
    expect(view(s)).toMatchObject({ state: 'COMPLETED', answer: 'second answer', turns: 2, conversationOpen: false });
    expect(transition(s, { type: 'MESSAGE', text: 'late' }, at(1))).toEqual({ ok: false, error: 'the conversation is closed' });
  });

  test('without keepOpenMs a completed run takes no message', () => {
    const s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('done') });
    expect(s.phase).toEqual({ type: 'COMPLETED', conversationOpen: false });
    expect(transition(s, { type: 'MESSAGE', text: 'more' }, at(1)).ok).toBe(false);
  });
});

describe('carrying on from a snapshot', () => {
  test('every state restarts the work it stands for, without counting it twice', () => {
    const s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('c1')]) });
    expect(resumeAt(s, at(50)).commands).toEqual([{ type: 'timer', due: workDeadline(s) }, ...commandsFor(s)]);
    expect(work(commandsFor(s))).toEqual([{ type: 'runTools', calls: [call('c1')] }]);
    const streaming = { ...run(snapshot(), { type: 'START' }), partialText: 'par' };
    const resumed = resumeAt(streaming, at(50));
    expect(work(resumed.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 1 }]);
    expect(resumed.snapshot).toMatchObject({ counters: { loops: 1 }, partialText: '', stream: { callNumber: 1, attempt: 1 } });
    expect(commandsFor({ ...s, phase: { type: 'AWAITING_APPROVAL', pending: [], then: { type: 'TOOL_EXECUTING' } } })).toEqual([]);
    // A snapshot taken inside a macrostep (a fork from a PROCESSING step) takes the internal step on resuming.
    const processing = { ...s, phase: { type: 'PROCESSING' } as Phase, toolRound: { ...s.toolRound, pending: [call('c2')] } };
    expect(work(resumeAt(processing, at(50)).commands)).toEqual([{ type: 'runTools', calls: [call('c2')] }]);
  });
});

describe('real providers and people', () => {
  const cut = (text: string, toolCalls: ToolCall[] = []): ModelResponse => ({ ...response(text, toolCalls), finishReason: 'length' });
  const HOUR = 3600;

  test('the working-time clock stops while a person decides and starts again with what was left', () => {
    let s = run(snapshot({ approval: { tools: ['writeFile'] }, limits: { approvalTimeoutMs: null } }), { type: 'START' }); // at(1): deadline at(301)
    expect(workDeadline(s)).toBe(at(301));
    const waiting = step(s, { type: 'MODEL_RESPONDED', response: response('', [call('w', 'writeFile')]) }, at(11));
    s = waiting.snapshot;
    expect(waiting.commands).toEqual([{ type: 'timer', due: null }]); // no clock runs while a person decides
    expect([s.phase.type, workDeadline(s), view(s).workRemainingMs, s.clocks.approvalDeadline]).toEqual(['AWAITING_APPROVAL', null, 290_000, null]);
    // Approved an hour later: 290 s of working time remain from then.
    const approved = transition(s, { type: 'APPROVAL', toolCallId: 'w', approved: true }, at(HOUR));
    expect(approved.ok && [approved.snapshot.phase.type, workDeadline(approved.snapshot), view(approved.snapshot).workRemainingMs]).toEqual(['TOOL_EXECUTING', at(HOUR + 290), null]);
  });

  test('pausing stops the clock too', () => {
    const paused = (base: RunSnapshot) => {
      const s = run(base, { type: 'START' }, { type: 'PAUSE' });
      return step(s, { type: 'MODEL_RESPONDED', response: response('', [call('r')]) }, at(101)).snapshot;
    };
    const s = paused(snapshot());
    expect([s.phase.type, workDeadline(s), view(s).workRemainingMs]).toEqual(['PAUSED', null, 200_000]);
    const resumed = transition(s, { type: 'RESUME' }, at(HOUR));
    expect(resumed.ok && [resumed.snapshot.phase.type, workDeadline(resumed.snapshot)]).toEqual(['TOOL_EXECUTING', at(HOUR + 200)]);
  });

  test('limits.approvalTimeoutMs ends a run whose approval waits too long, naming the tools', () => {
    let s = run(snapshot({ approval: { tools: ['writeFile'] }, limits: { approvalTimeoutMs: 60_000 } }), { type: 'START' });
    const waiting = step(s, { type: 'MODEL_RESPONDED', response: response('', [call('w', 'writeFile')]) }, at(10));
    s = waiting.snapshot;
    expect(s.clocks.approvalDeadline).toBe(at(70));
    expect(waiting.commands).toEqual([{ type: 'timer', due: at(70) }]);
    const r = transition(s, { type: 'TIMEOUT' }, at(70));
    expect(r.ok && [r.snapshot.phase.type, r.snapshot.reason?.text, r.snapshot.clocks.approvalDeadline]).toEqual([
      'FAILED',
      'no decision on writeFile within 60000 ms (limits.approvalTimeoutMs)',
      null,
    ]);
  });

  const awaiting = (input: Partial<AgentRunInput>) => {
    const s = run(snapshot({ ...input, approval: { tools: ['writeFile'], ...input.approval }, limits: { approvalTimeoutMs: 100_000, ...input.limits } }), { type: 'START' });
    return step(s, { type: 'MODEL_RESPONDED', response: response('', [call('w', 'writeFile'), call('v', 'writeFile', { path: 'b' }), call('r')]) }, at(10));
  };

  test("approval.onTimeout 'reject' rejects the calls still waiting, tells the model why, and the run goes on", () => {
    const waiting = awaiting({ approval: { tools: ['writeFile'], onTimeout: 'reject' } });
    const decided = step(waiting.snapshot, { type: 'APPROVAL', toolCallId: 'v', approved: true }, at(20)).snapshot;
    const r = step(decided, { type: 'TIMEOUT' }, at(110));
    expect([r.snapshot.phase.type, r.snapshot.reason?.text]).toEqual(['TOOL_EXECUTING', 'no decision on writeFile within 100000 ms (limits.approvalTimeoutMs): rejected (approval.onTimeout is reject)']);
    // The approved call and the unguarded one run; the undecided one is answered for the model.
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: [call('v', 'writeFile', { path: 'b' }), call('r')] }]);
    const done = step(r.snapshot, { type: 'TOOLS_DONE', results: ['v', 'r'].map((id) => ({ toolCallId: id, name: 'x', ok: true, content: 'ok' })) }).snapshot;
    expect(done.messages.find((m) => m.role === 'tool' && m.toolCallId === 'w')?.content).toBe(approvalTimedOut(100_000));
    expect(done.phase.type).toBe('STREAMING');
    // 'fail' (the default) ends the run as before; a budget request has no rejection to go on with.
    expect(step(awaiting({}).snapshot, { type: 'TIMEOUT' }, at(110)).snapshot.phase.type).toBe('FAILED');
    const budget = { ...waiting.snapshot, phase: { ...waiting.snapshot.phase, pending: [{ toolCallId: 'budget', kind: 'budget', name: 'budget', arguments: '{}' }] } } as RunSnapshot;
    expect(step(budget, { type: 'TIMEOUT' }, at(110)).snapshot.phase.type).toBe('FAILED');
  });

  test('approval.reminderAt raises one reminder at its share of the window, from the timer; the wait goes on to its deadline', () => {
    const waiting = awaiting({ approval: { tools: ['writeFile'], reminderAt: 0.8 } });
    expect(waiting.snapshot.clocks.approvalReminderDue).toBe(at(90));
    expect(waiting.commands[0]).toEqual({ type: 'timer', due: at(90) });
    const reminded = step(waiting.snapshot, { type: 'TIMEOUT' }, at(90));
    expect(reminded.snapshot.phase.type).toBe('AWAITING_APPROVAL');
    expect(reminded.snapshot.counters.step).toBe(waiting.snapshot.counters.step);
    expect(reminded.commands).toEqual([{ type: 'timer', due: at(110) }]);
    expect(view(reminded.snapshot).approvalReminder).toEqual({ at: at(90), deadline: at(110), onTimeout: 'fail', toolCallIds: ['w', 'v'] });
    expect(step(reminded.snapshot, { type: 'TIMEOUT' }, at(110)).snapshot.phase.type).toBe('FAILED');
    // Decided in time: the reminder goes with the wait.
    const approved = run(reminded.snapshot, { type: 'APPROVAL', toolCallId: 'w', approved: true }, { type: 'APPROVAL', toolCallId: 'v', approved: true });
    expect([approved.phase.type, view(approved).approvalReminder, approved.clocks.approvalReminderDue, timerDue(approved)]).toEqual(['TOOL_EXECUTING', null, null, workDeadline(approved)]);
  });

  test('approval.reminderAt and onTimeout reject need limits.approvalTimeoutMs, and say so', () => {
    const optedOut = { approvalTimeoutMs: null };
    expect(parseAgentRunInput({ prompt: 'p', approval: { tools: ['x'], reminderAt: 0.5 }, limits: optedOut })).toEqual({ ok: false, error: 'Invalid agentRun input: approval.reminderAt: needs limits.approvalTimeoutMs (the window it is a share of), not null' });
    expect(parseAgentRunInput({ prompt: 'p', approval: { tools: ['x'], onTimeout: 'reject' }, limits: optedOut })).toEqual({ ok: false, error: "Invalid agentRun input: approval.onTimeout: 'reject' needs limits.approvalTimeoutMs, not null" });
    expect(parseAgentRunInput({ prompt: 'p', approval: { tools: ['x'], reminderAt: 1 }, limits: { approvalTimeoutMs: 5_000 } })).toMatchObject({ ok: false, error: expect.stringContaining('approval.reminderAt') });
  });

  test('limits.maxPausedMs aborts a run paused that long, saying why; resuming in time stops the clock', () => {
    const paused = run(snapshot({ limits: { maxPausedMs: 3_600_000 } }), { type: 'START' }, { type: 'PAUSE' }, { type: 'MODEL_RESPONDED', response: response('', [call('r')]) });
    expect([paused.phase.type, paused.clocks.pausedDeadline, timerDue(paused)]).toEqual(['PAUSED', at(3 + HOUR), at(3 + HOUR)]);
    const r = step(paused, { type: 'TIMEOUT' }, at(3 + HOUR));
    expect([r.snapshot.phase.type, r.snapshot.reason?.text]).toEqual(['ABORTED', 'aborted: paused for 3600000 ms (limits.maxPausedMs)']);
    const resumed = step(paused, { type: 'RESUME' }, at(60)).snapshot;
    expect([resumed.phase.type, resumed.clocks.pausedDeadline]).toEqual(['TOOL_EXECUTING', null]);
    // With the limit null (opted out of its 7 days) a paused run has no timer.
    const open = run(snapshot({ limits: { maxPausedMs: null } }), { type: 'START' }, { type: 'PAUSE' }, { type: 'MODEL_RESPONDED', response: response('', [call('r')]) });
    expect([open.phase.type, timerDue(open)]).toEqual(['PAUSED', null]);
    expect(transition(open, { type: 'TIMEOUT' }, at(99))).toEqual({ ok: false, error: 'no timer is running: the run waits for a person' });
  });

  test('an answer cut off by the output limit is continued and the parts joined into one answer', () => {
    const next = step(run(snapshot({ maxOutputTokens: 5 }), { type: 'START' }), { type: 'MODEL_RESPONDED', response: cut('The capital ') });
    expect(next.snapshot.phase.type).toBe('STREAMING');
    expect(next.snapshot.messages.at(-1)).toEqual({ role: 'user', content: CONTINUE_PROMPT });
    expect(work(next.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 2 }]);
    const s = run(next.snapshot, { type: 'MODEL_RESPONDED', response: response('is Paris.') });
    expect(s.messages.slice(-1)).toEqual([{ role: 'assistant', content: 'The capital is Paris.' }]);
    expect([s.phase.type, s.answer, s.counters.continuations]).toEqual(['COMPLETED', 'The capital is Paris.', 0]);
  });

  test(`an answer still cut off after ${MAX_CONTINUATIONS} continuations ends the run with the text, saying so`, () => {
    let s = run(snapshot({ maxOutputTokens: 5 }), { type: 'START' });
    for (let i = 0; i <= MAX_CONTINUATIONS; i++) s = run(s, { type: 'MODEL_RESPONDED', response: cut(`part${i} `) });
    expect(s.phase.type).toBe('COMPLETED');
    expect(s.answer).toBe('part0 part1 part2 part3 ');
    expect(s.reason?.text).toBe(`the answer was cut off by maxOutputTokens 5 and still was after ${MAX_CONTINUATIONS} continuations: it ends truncated`);
    // Nor does a cut-off answer fail the run when maxLoops leaves no call to continue it: it ends with the text.
    const last = run(snapshot({ limits: { maxLoops: 2 } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: cut('a ') });
    const ended = run(last, { type: 'MODEL_RESPONDED', response: cut('b') });
    expect([ended.phase.type, ended.answer, ended.reason?.text]).toEqual([
      'COMPLETED',
      'a b',
      "the answer was cut off by the provider's output limit and limits.maxLoops (2) leaves no model call to continue it: it ends truncated",
    ]);
  });

  test('tool calls cut off by the output limit go back to the model as errors, not to the tools', () => {
    const r = step(run(snapshot(), { type: 'START' }), { type: 'MODEL_RESPONDED', response: cut('', [call('c', 'writeFile', '{"path":"a.t')]) });
    expect(r.snapshot.phase.type).toBe('STREAMING');
    expect(r.snapshot.messages.at(-1)).toEqual({ role: 'tool', toolCallId: 'c', content: CUT_TOOL_CALL });
    expect(r.snapshot.counters.toolCalls).toBe(0);
  });

  test('with a known context window the run compacts before the request would pass the threshold, once per step', () => {
    const big = 'x'.repeat(6_000); // 1,000 tokens even at the 6 characters a token the estimate allows at most
    const input = { contextWindowTokens: 1_000, compaction: { threshold: 0.8, keepRecentMessages: 2 } };
    const s = run(snapshot(input), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('r')]) });
    const r = step(s, { type: 'TOOLS_DONE', results: [{ toolCallId: 'r', name: 'readFile', ok: true, content: big }] });
    expect(r.snapshot.phase.type).toBe('COMPACTING');
    expect(work(r.commands)).toEqual([{ type: 'compact', keepRecent: 2 }]);
    expect(r.snapshot.reason?.text).toMatch(/^compacting first: the next request is about \d+ tokens, over 800 \(compaction.threshold 0.8 of a 1000-token context window\)$/);
    // Still over after compacting: the request goes out and the provider decides (the reactive path stays).
    const back = step(r.snapshot, { type: 'COMPACTED', result: { messages: r.snapshot.messages, summarizedMessages: 1, usage: { promptTokens: 7, completionTokens: 3, totalTokens: 10 } } });
    expect(back.snapshot.phase.type).toBe('STREAMING');
    expect(back.snapshot.usage.totalTokens).toBe(r.snapshot.usage.totalTokens + 10);
    // No window known: no estimate, no early compaction.
    const unknown = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('r')]) });
    expect(run(unknown, { type: 'TOOLS_DONE', results: [{ toolCallId: 'r', name: 'readFile', ok: true, content: big }] }).phase.type).toBe('STREAMING');
  });

  test("the estimate uses the provider's count of the last request, and the window the worker reported", () => {
    const s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: { ...response('', [call('r')]), usage: { promptTokens: 100, completionTokens: 1, totalTokens: 101 }, contextWindowTokens: 2_000 } });
    expect(s.contextWindow).toBe(2_000);
    expect(s.promptCalibration).toEqual({ chars: s.messages.slice(0, -1).reduce((n, m) => n + (m.content ?? '').length, 0), tokens: 100 });
  });

  test("a what-if fork's replayed answer spends nothing but calibrates the estimate by the original's count", () => {
    const replayed: ModelResponse = { ...response('', [call('r')]), usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, replayed: true, recordedPromptTokens: 250 };
    const s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: replayed });
    expect(s.promptCalibration).toEqual({ chars: s.messages.slice(0, -1).reduce((n, m) => n + (m.content ?? '').length, 0), tokens: 250 });
    expect(s.usage.promptTokens).toBe(0);
    // Recorded before the count was kept (older forks): the estimate stays where it was.
    const { recordedPromptTokens: _n, ...older } = replayed;
    expect(run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: older }).promptCalibration).toBeNull();
  });

  test('a complete the critic is not confident of is another attempt; its tokens count', () => {
    let s = run(judged({ critiqueMinConfidence: 70 }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('maybe 5') });
    const usage = { promptTokens: 40, completionTokens: 10, totalTokens: 50 };
    s = run(s, { type: 'CRITIQUE_DONE', decision: { action: 'complete', reason: 'looks right', confidence: 40 }, usage });
    expect(s.phase.type).toBe('STREAMING');
    expect(s.lastCritique).toEqual({ action: 'retry', reason: 'the critic is not confident enough (40 < critiqueMinConfidence 70): looks right', confidence: 40 });
    expect(s.usage.totalTokens).toBe(15 + 50);
    s = run(s, { type: 'MODEL_RESPONDED', response: response('4') }, { type: 'CRITIQUE_DONE', decision: { action: 'complete', reason: 'right', confidence: 90 } });
    expect([s.phase.type, s.answer]).toEqual(['COMPLETED', '4']);
  });

  test('a model request carries the output limit and the tool names the worker must have', () => {
    const s = run(snapshot({ maxOutputTokens: 256, tools: ['readFile', 'writeFile'], approval: { tools: ['writeFile', '*'] } }), { type: 'START' });
    expect(modelRequest(s, 'respond', 1)).toMatchObject({ maxOutputTokens: 256, checkTools: ['readFile', 'writeFile'] });
  });
});

describe('a failed model critic', () => {
  test('is an event: the rule critic decides, and its reason says the model critic was unavailable', () => {
    const s = run(snapshot({ critique: 'model' }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('4') });
    expect(commandsFor(s)).toEqual([{ type: 'critique', request: { model: undefined, task: 'do the task', answer: '4', callNumber: 2 } }]);
    const r = step(s, { type: 'CRITIC_FAILED', error: 'model provider error (503): overloaded' });
    expect([r.snapshot.phase.type, r.snapshot.answer]).toEqual(['COMPLETED', '4']);
    expect(r.snapshot.lastCritique).toEqual({
      action: 'complete',
      reason: 'the model answered without calling tools (model critic unavailable: model provider error (503): overloaded)',
      confidence: 80,
    });
    // An empty answer is still sent back, as the rule critic would.
    const empty = run(snapshot({ critique: 'model' }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('') });
    expect(step(empty, { type: 'CRITIC_FAILED', error: 'x' }).snapshot.phase.type).toBe('STREAMING');
  });
});

describe('a model critic on a tool step', () => {
  const afterTools = (s: RunSnapshot, ok = true) =>
    run(s, { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('Reading it.', [call('r1')]) }, { type: 'TOOLS_DONE', results: [{ toolCallId: 'r1', name: 'readFile', ok, content: ok ? 'hello' : 'Error: no such file' }] });
  const decide = (action: CritiqueAction) => ({ type: 'CRITIQUE_DONE', decision: { action, reason: 'the file was the wrong one', confidence: 90 } }) as const;

  test('is asked with the task, the calls and their results', () => {
    const s = afterTools(judged());
    expect(s.phase.type).toBe('CRITIQUE');
    expect(commandsFor(s)).toEqual([
      {
        type: 'critique',
        request: { model: undefined, task: 'do the task', answer: 'Reading it.', callNumber: 2, toolResults: [{ name: 'readFile', arguments: '{"path":"a.txt"}', ok: true, content: 'hello' }] },
      },
    ]);
  });

  test.each([
    ['continue', 'STREAMING'],
    ['retry', 'STREAMING'],
    ['replan', 'PLANNING'],
    // The model has not answered with the results yet: a complete is read as continue.
    ['complete', 'STREAMING'],
  ] as const)('%s leads to %s', (action, expected) => {
    expect(step(afterTools(judged()), decide(action)).snapshot.phase.type).toBe(expected);
  });

  test('its retry after a successful step tells the model why; its continue after a failed one adds nothing', () => {
    const retried = step(afterTools(judged()), decide('retry')).snapshot;
    expect(retried.messages.at(-1)).toEqual({ role: 'user', content: `${TOOL_RETRY_NOTE}the file was the wrong one` });
    expect(retried.lastCritique?.action).toBe('retry');
    const failed = afterTools(judged(), false);
    expect(step(failed, decide('continue')).snapshot.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'r1' });
  });

  test('the rules still judge tool steps in runs that ask for rules', () => {
    const rules = afterTools(snapshot());
    expect([rules.phase.type, rules.lastCritique?.reason]).toEqual(['STREAMING', '1 tool call(s) succeeded']);
  });

  test('a failed critic on a tool step falls back to the rules', () => {
    const r = step(afterTools(judged(), false), { type: 'CRITIC_FAILED', error: 'overloaded' });
    expect([r.snapshot.phase.type, r.snapshot.lastCritique?.action]).toEqual(['STREAMING', 'retry']);
  });
});

describe("the worker's tool policy", () => {
  const calls = [
    { ...call('d1', 'writeFile', { path: 'x' }), policy: { action: 'deny' as const, message: 'Not here.' } },
    { ...call('a1', 'readFile', { path: 'secret' }), policy: { action: 'approve' as const, reason: 'a secret' } },
    { ...call('r1', 'readFile', { path: 'b.txt' }), policy: { action: 'rewrite' as const, original: '{"path":"../b.txt"}' } },
    call('ok'),
  ];
  const answered = () => run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', calls) });

  test('a denied call is answered with its message, a held one waits for approval, the others run; the reason lists each verdict', () => {
    const s = answered();
    expect(s.phase).toMatchObject({ type: 'AWAITING_APPROVAL', pending: [{ toolCallId: 'a1', name: 'readFile' }] });
    expect(s.reason?.text).toBe('tool policy: denied writeFile (d1): Not here.; held for approval readFile (a1): a secret; rewrote the arguments of readFile (r1)');
    expect(view(s).recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 'd1', policy: 'deny', ok: false, output: 'Not here.', endedAt: expect.any(String) })]);
    const r = step(s, { type: 'APPROVAL', toolCallId: 'a1', approved: true });
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: calls.slice(1) }]);
    expect(view(r.snapshot).recentToolCalls.map((c) => [c.toolCallId, c.policy])).toEqual([['d1', 'deny'], ['a1', 'approve'], ['r1', 'rewrite'], ['ok', undefined]]);
    const done = step(r.snapshot, { type: 'TOOLS_DONE', results: ['a1', 'r1', 'ok'].map((id) => ({ toolCallId: id, name: 'readFile', ok: true, content: 'text' })) }).snapshot;
    expect(done.messages.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', toolCallId: 'd1', content: 'Not here.' },
      ...['a1', 'r1', 'ok'].map((id) => ({ role: 'tool', toolCallId: id, content: 'text' })),
    ]);
    expect(done.counters.toolCalls).toBe(3);
  });

  test('a turn whose calls the policy all denied enters TOOL_EXECUTING with no tool to run', () => {
    const denied = [{ ...call('d1'), policy: { action: 'deny' as const, message: 'No.' } }];
    const s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', denied) });
    expect(s.phase.type).toBe('TOOL_EXECUTING');
    expect(commandsFor(s)).toEqual([{ type: 'runTools', requests: [] }]);
  });
});

describe('calls the model call ran ahead', () => {
  const local = (id: string, name = 'readFile', extra: Partial<ToolCall> = {}): ToolCall => ({ ...call(id, name, { path: `${id}.txt` }), local: true, pure: true, ...extra });
  const result = (id: string, name = 'readFile') => ({ toolCallId: id, name, ok: true, content: `ran ${id}` });
  const responded = (s: RunSnapshot, calls: ToolCall[], before: AgentEvent[] = []) =>
    run(s, { type: 'START' }, ...before, { type: 'MODEL_RESPONDED', response: { ...response('', calls), toolResults: calls.map((c) => result(c.id, c.name)) } });
  const ranAhead = (c: AgentCommand[]) => (work(c)[0] as { calls: ToolCall[] }).calls.map((call) => [call.id, call.ranAhead?.content]);

  test('a pure local call that runs at once keeps its result: TOOL_EXECUTING takes it, and counts and logs it as a call that ran', () => {
    const s = responded(snapshot(), [local('l1'), call('w1', 'writeFile', { path: 'b.txt', content: 'x' })]);
    expect(s.phase.type).toBe('TOOL_EXECUTING');
    // The call a worker may not run ahead (writeFile has side effects) runs as ever, whatever the response said.
    expect(ranAhead(commandsFor(s))).toEqual([['l1', 'ran l1'], ['w1', undefined]]);
    expect(s.messages.at(-1)).toEqual({ role: 'assistant', content: null, toolCalls: [local('l1'), call('w1', 'writeFile', { path: 'b.txt', content: 'x' })] });
    const done = step(s, { type: 'TOOLS_DONE', results: [result('l1'), result('w1', 'writeFile')] }).snapshot;
    expect(done.counters.toolCalls).toBe(2);
    expect(done.toolRound.pending).toEqual([]);
    expect(view(done).recentToolCalls.map((c) => [c.toolCallId, c.ok])).toEqual([['l1', true], ['w1', true]]);
  });

  test('a call that waits for a person, or that the policy denied, has its result dropped and runs after the decision with the arguments decided', () => {
    const schema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false };
    const calls = [
      local('g1', 'listFiles', { parameters: schema }),
      local('h1', 'readFile', { policy: { action: 'approve' }, parameters: schema }),
      local('d1', 'readFile', { policy: { action: 'deny', message: 'No.' } }),
      local('r1', 'readFile', { policy: { action: 'rewrite', original: '{"path":"../a.txt"}' } }),
    ];
    const s = responded(snapshot({ approval: { tools: ['listFiles'] } }), calls);
    expect(s.phase).toMatchObject({ type: 'AWAITING_APPROVAL', pending: [{ toolCallId: 'g1' }, { toolCallId: 'h1' }] });
    expect(s.toolRound.pending.map((c) => [c.id, c.ranAhead?.content])).toEqual([['g1', undefined], ['h1', undefined], ['d1', undefined], ['r1', 'ran r1']]);
    const approved = step(s, { type: 'APPROVAL', toolCallId: 'g1', approved: true, arguments: { path: 'sub' } }).snapshot;
    const r = step(approved, { type: 'APPROVAL', toolCallId: 'h1', approved: true });
    expect(ranAhead(r.commands)).toEqual([['g1', undefined], ['h1', undefined], ['r1', 'ran r1']]);
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: [expect.objectContaining({ id: 'g1', arguments: '{"path":"sub"}', edited: true }), expect.anything(), expect.anything()] }]);
  });

  test('a fork runs the pending calls itself, as before: the results the original ran ahead stay with it', () => {
    const s = responded(snapshot(), [local('l1')], [{ type: 'PAUSE' }]);
    expect(s.phase).toMatchObject({ type: 'PAUSED', resumeTo: { type: 'TOOL_EXECUTING' } });
    const forked = carryOn({ kind: 'fork', snapshot: s as never }, carriedSnapshot({ kind: 'fork', snapshot: s as never }), 'fork-1', at(50));
    expect(forked.toolRound.pending).toEqual([local('l1')]);
    expect(ranAhead(commandsFor(step(forked, { type: 'RESUME' }).snapshot))).toEqual([['l1', undefined]]);
    expect(ranAhead(commandsFor(step(s, { type: 'RESUME' }).snapshot))).toEqual([['l1', 'ran l1']]);
  });
});

describe('a fork\'s clocks', () => {
  test('start afresh with the limits it carries; waiting already when a person decides', () => {
    const s = snapshot({ limits: { timeoutMs: 600_000, approvalTimeoutMs: 60_000, maxPausedMs: null } });
    const running = { state: 'running', deadline: at(610) };
    const stopped = { state: 'stopped', remainingMs: 600_000 };
    expect(freshClocks({ ...s, phase: { type: 'STREAMING' } as Phase }, at(10))).toEqual({ work: running, approvalDeadline: null });
    expect(freshClocks({ ...s, phase: { type: 'AWAITING_APPROVAL', pending: [], then: { type: 'TOOL_EXECUTING' } } }, at(10))).toEqual({ work: stopped, approvalDeadline: at(70) });
    expect(freshClocks({ ...s, phase: { type: 'PAUSED' } as Phase }, at(10))).toEqual({ work: stopped, approvalDeadline: null });
  });
});

describe('the conversation chain', () => {
  const stored = (count: number) => ({ ref: `sha-${count}`, count });
  const callOf = (commands: AgentCommand[]) => commands.find((c) => c.type === 'callModel')?.request;

  test('a call sends the stored conversation and the messages since; a rewrite of the conversation drops the chain', () => {
    const started = step(snapshot(), { type: 'START' });
    expect(callOf(started.commands)).toMatchObject({ chain: {}, messages: started.snapshot.messages });
    const sent = started.snapshot.messages.length;
    const answered = step(started.snapshot, { type: 'MODEL_RESPONDED', response: { ...response('', [call('c1')]), conversation: stored(sent) } });
    expect(answered.snapshot.chain).toEqual(stored(sent));
    const next = step(answered.snapshot, { type: 'TOOLS_DONE', results: [{ toolCallId: 'c1', name: 'readFile', ok: true, content: 'x' }] });
    expect(callOf(next.commands)).toMatchObject({ chain: { base: stored(sent) }, messages: next.snapshot.messages.slice(sent) });
    // Compaction rewrites the conversation: the next call sends all of it and starts a new chain.
    const compacting = step(next.snapshot, { type: 'CONTEXT_OVERFLOW', error: 'too long' }).snapshot;
    const compacted = step(compacting, { type: 'COMPACTED', result: { messages: [{ role: 'user', content: 'summary' }], summarizedMessages: 3, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } } });
    expect(compacted.snapshot.chain).toBeNull();
    expect(callOf(compacted.commands)).toMatchObject({ chain: {}, messages: [{ role: 'user', content: 'summary' }] });
  });

  test('a stored conversation that is not what was sent is not a base; a worker that cannot read the chain gets everything', () => {
    const started = step(snapshot(), { type: 'START' }).snapshot;
    const mismatched = step(started, { type: 'MODEL_RESPONDED', response: { ...response('', [call('c1')]), conversation: stored(99) } });
    expect(mismatched.snapshot.chain).toBeNull();
    const chained = { ...started, chain: stored(2) };
    const retried = step(chained, { type: 'CHAIN_UNAVAILABLE', error: 'blob gone' });
    expect([retried.snapshot.phase.type, retried.snapshot.counters.step, retried.snapshot.chain]).toEqual(['STREAMING', chained.counters.step, null]);
    expect(callOf(retried.commands)).toMatchObject({ chain: {}, messages: chained.messages, callNumber: 1 });
  });

  test('a continued answer is joined into one message, so the chain stored before it no longer applies', () => {
    const s = step(snapshot({ maxOutputTokens: 5 }), { type: 'START' }).snapshot;
    const cut = step(s, { type: 'MODEL_RESPONDED', response: { ...response('The cap'), finishReason: 'length', conversation: stored(s.messages.length) } }).snapshot;
    const sent = cut.messages.length;
    const joined = step(cut, { type: 'MODEL_RESPONDED', response: { ...response('ital.'), conversation: stored(sent) } }).snapshot;
    expect(joined.messages.length).toBe(sent - 1);
    expect(joined.chain).toBeNull();
  });
});

describe('stored snapshots: one version, validated', () => {
  const stored = (name: string): unknown => JSON.parse(readFileSync(path.join(__dirname, 'fixtures/snapshots', `${name}.json`), 'utf8'));

  test('a 1.0 snapshot the machine wrote at a budget approval loads and goes on as it would have', () => {
    const s = loadSnapshot(stored('budget'));
    expect([s.phase.type, s.reason?.kind, s.clocks.work.state]).toEqual(['AWAITING_APPROVAL', 'budget', 'stopped']);
    const declined = step(s, { type: 'APPROVAL', toolCallId: 'budget', approved: false, feedback: 'too dear' }).snapshot;
    expect([declined.phase.type, declined.reason]).toEqual(['FAILED', { kind: 'ended', text: `${s.reason?.text}; extending the budget was declined: too dear` }]);
    const approved = step(s, { type: 'APPROVAL', toolCallId: 'budget', approved: true }, at(1_000));
    expect([approved.snapshot.phase.type, approved.snapshot.clocks.work]).toEqual(['STREAMING', { state: 'running', deadline: at(1_000 + 298) }]);
  });

  test('what this worker writes, in every state, loads back unchanged', () => {
    for (const state of STATES) {
      const s = snapshotIn(state);
      expect([state, loadSnapshot(JSON.parse(JSON.stringify(s)))]).toEqual([state, s]);
      expect(RunSnapshotSchema.strict().safeParse(s).error?.issues ?? []).toEqual([]);
    }
    const busy = run(snapshot({ approval: { tools: ['writeFile'] }, budget: { maxTokens: 10_000 } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('w', 'writeFile'), call('r')]) });
    expect(loadSnapshot(JSON.parse(JSON.stringify(busy)))).toEqual(busy);
  });

  test('a malformed snapshot is refused with an error naming the field', () => {
    expect(() => loadSnapshot(stored('malformed-missing-field'))).toThrow('Invalid snapshot: usage: Invalid input: expected object, received undefined');
    expect(() => loadSnapshot(stored('malformed-wrong-type'))).toThrow('Invalid snapshot: phase.pending.1.arguments: Invalid input: expected string, received object');
    expect(readSnapshot('a snapshot')).toEqual({ ok: false, error: 'Invalid snapshot: (input): Invalid input: expected object, received string' });
  });

  test('a snapshot of any other version is refused for that alone, naming the field and the version this worker knows', () => {
    const refused = "Invalid snapshot: schemaVersion: unknown snapshot version 3: this worker reads version '1.0' only";
    expect(readSnapshot(stored('malformed-unknown-version'))).toEqual({ ok: false, error: refused });
    const current = snapshotIn(AgentState.PAUSED);
    for (const other of [1, 2, 3, '1.1', undefined]) expect(readSnapshot({ ...current, schemaVersion: other }).ok).toBe(false);
    expect(readSnapshot({ ...current, schemaVersion: '1.0' }).ok).toBe(true);
  });
});

describe('the public view', () => {
  test('has exactly the fields the gateway documents, and none of the machine bookkeeping', () => {
    const s = run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('w', 'writeFile')]) });
    const v = publicView(s, true);
    const documented = (openApiDocument() as { components: { schemas: { RunState: { properties: object; required: string[] } } } }).components.schemas.RunState;
    // `stored`, `retrying` and `degraded` are added by the client (the run's stored copy, the server's pending activities).
    const byClient = ['stored', 'retrying', 'degraded'];
    expect(Object.keys(v).sort()).toEqual(Object.keys(documented.properties).filter((k) => !byClient.includes(k)).sort());
    expect(Object.keys(publicView(s, false)).sort()).toEqual([...documented.required].sort());
    expect(v).toMatchObject({ state: 'AWAITING_APPROVAL', pendingApproval: [{ toolCallId: 'w', kind: 'tool' }], resumeTo: null, conversationOpen: false });
    for (const internal of ['phase', 'features', 'chain', 'loopWarned', 'overflowsInARow', 'toolSignatures', 'presetResults', 'promptCalibration']) expect(v).not.toHaveProperty(internal);
  });

  test('in every state, matches its zod schema and the OpenAPI document generated from it', () => {
    const views = [...STATES.map((state) => publicView(snapshotIn(state), true)), publicView(loadSnapshot(JSON.parse(readFileSync(path.join(__dirname, 'fixtures/snapshots/budget.json'), 'utf8'))), true)];
    for (const v of views) {
      expect([v.state, RunStateViewSchema.strict().safeParse(v).error?.issues ?? []]).toEqual([v.state, []]);
      expect([v.state, undocumented(v)]).toEqual([v.state, []]);
    }
    // The document is strict where the view is: a field it does not know, or one of the wrong type, is named.
    expect(undocumented({ ...views[0], extra: 1, step: 'one' })).toEqual(expect.arrayContaining(['/step must be integer', '(view) must NOT have additional properties: extra']));
  });
});

describe('what a run produced', () => {
  test('an aborted run keeps the last message and the text of the call it cut short; a completed one has its answer', () => {
    let s = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('Looking at a.txt first.', [call('c1')]) });
    s = run(s, { type: 'TOOLS_DONE', results: [{ toolCallId: 'c1', name: 'readFile', ok: true, content: 'x' }] });
    const aborted = run(s, { type: 'ABORT', reason: 'stop', cut: { callNumber: 2, text: 'The file sa' } });
    expect(runResult(aborted)).toMatchObject({ status: 'ABORTED', answer: null, lastText: 'Looking at a.txt first.', partialText: 'The file sa' });
    expect(view(aborted).lastText).toBe('Looking at a.txt first.');
    // Aborted between calls (tools running): nothing was cut short.
    expect(runResult(run(step(s, { type: 'MODEL_RESPONDED', response: response('', [call('c2')]) }).snapshot, { type: 'ABORT' })).partialText).toBeNull();
    const done = run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('42') });
    expect(runResult(done)).toMatchObject({ status: 'COMPLETED', answer: '42', lastText: '42', partialText: null });
  });
});

describe('wrapping up near a limit', () => {
  const notes = (s: RunSnapshot) => s.messages.filter((m) => m.role === 'user' && m.content?.startsWith("You are close to this run's limits"));
  const answerAgain = (s: RunSnapshot) => run(s, { type: 'MODEL_RESPONDED', response: response('not yet') }, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'r', confidence: 100 } });

  test('the model is told once, on the call that reaches limits.wrapUpAt of maxLoops', () => {
    let s = run(judged({ limits: { maxLoops: 5, maxRepeats: 10 } }), { type: 'START' });
    for (let call = 2; call <= 3; call++) s = answerAgain(s);
    expect([s.counters.loops, notes(s)]).toEqual([3, []]);
    s = answerAgain(s); // call 4 of 5: 4 >= 0.8 * 5
    expect(s.counters.loops).toBe(4);
    expect(notes(s).map((m) => m.content)).toEqual([wrapUpNote('this is model call 4 of at most 5')]);
    expect(s.messages.at(-1)).toEqual(notes(s)[0]);
    s = answerAgain(s);
    expect([s.counters.loops, notes(s).length]).toEqual([5, 1]);
  });

  test('tool calls count too; wrapUpAt 1 never tells', () => {
    const tooling = (input: Partial<AgentRunInput>) => {
      let s = run(snapshot(input), { type: 'START' });
      for (let i = 1; i <= 4; i++) {
        s = run(s, { type: 'MODEL_RESPONDED', response: response('', [call(`c${i}`, 'readFile', { path: `${i}.txt` })]) });
        s = run(s, { type: 'TOOLS_DONE', results: [{ toolCallId: `c${i}`, name: 'readFile', ok: true, content: 'x' }] });
      }
      return s;
    };
    expect(notes(tooling({ limits: { maxToolCalls: 5 } })).map((m) => m.content)).toEqual([wrapUpNote('4 of at most 5 tool calls are used')]);
    expect(notes(tooling({ limits: { maxToolCalls: 5, wrapUpAt: 1 } }))).toEqual([]);
  });
});

describe('tool calls for watchers', () => {
  test('each call is recorded when its step starts it and when TOOLS_DONE ends it, with the start of its output', () => {
    let s = run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' });
    s = step(s, { type: 'MODEL_RESPONDED', response: response('', [call('r1'), call('w1', 'writeFile')]) }, at(5)).snapshot;
    s = step(s, { type: 'APPROVAL', toolCallId: 'w1', approved: false }, at(6)).snapshot; // rejected: never runs, ends at once
    expect(s.logs.toolCalls).toEqual([
      { toolCallId: 'w1', name: 'writeFile', arguments: '{"path":"a.txt"}', rejected: true, decidedBy: { kind: 'service' }, decidedAt: at(6), startStep: s.counters.step, startedAt: at(6), endStep: s.counters.step, endedAt: at(6), ok: false, output: 'The user rejected this call.' },
      { toolCallId: 'r1', name: 'readFile', arguments: '{"path":"a.txt"}', startStep: s.counters.step, startedAt: at(6), endStep: null, endedAt: null, ok: null, output: null },
    ]);
    const done = step(s, { type: 'TOOLS_DONE', results: [{ toolCallId: 'r1', name: 'readFile', ok: true, content: 'y'.repeat(500) }] }, at(8)).snapshot;
    expect(done.logs.toolCalls[1]).toMatchObject({ endStep: s.counters.step + 1, endedAt: at(8), ok: true, output: `${'y'.repeat(199)}…` });
    expect(done.logs.transitions[s.counters.step]).toMatchObject({ from: 'TOOL_EXECUTING', to: 'CRITIQUE' }); // the step that ended it
    expect(view(done).recentToolCalls).toEqual(done.logs.toolCalls);
  });
});

describe('who decided (issue 52)', () => {
  const alice = { kind: 'user' as const, sub: 'alice', tenant: 'acme' };
  const bob = { kind: 'operator' as const, name: 'bob' };

  test('each decision records who made it and when, while the wait goes on and in the tool log once the calls run', () => {
    let s = run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' });
    s = step(s, { type: 'MODEL_RESPONDED', response: response('', [call('w1', 'writeFile'), call('w2', 'writeFile')]) }, at(5)).snapshot;
    s = step(s, { type: 'APPROVAL', toolCallId: 'w1', approved: true, by: alice }, at(6)).snapshot;
    expect(view(s).pendingApproval.map((p) => p.decision)).toEqual([{ approved: true, by: alice, at: at(6) }, undefined]);
    s = step(s, { type: 'APPROVAL', toolCallId: 'w2', approved: false }, at(7)).snapshot;
    expect(s.phase.type).toBe('TOOL_EXECUTING');
    expect(view(s).recentToolCalls.map((t) => [t.toolCallId, t.decidedBy, t.decidedAt, t.rejected ?? false])).toEqual([
      ['w2', { kind: 'service' }, at(7), true],
      ['w1', alice, at(6), false],
    ]);
    expect(view(s).controls).toEqual([
      // Each at the step the run was at once it took it: the wait's; the move DECIDED made follows.
      { event: 'APPROVAL', by: alice, at: at(6), step: 3, toolCallId: 'w1', approved: true },
      { event: 'APPROVAL', by: { kind: 'service' }, at: at(7), step: 3, toolCallId: 'w2', approved: false },
    ]);
  });

  test('a pause taken before the tools run keeps who decided for the tool log after resume', () => {
    let s = run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' });
    const guarded = { ...call('w1', 'writeFile'), parameters: { type: 'object', properties: { path: { type: 'string' } } } };
    s = step(s, { type: 'MODEL_RESPONDED', response: response('', [guarded]) }, at(5)).snapshot;
    s = step(s, { type: 'PAUSE', by: bob }, at(6)).snapshot;
    s = step(s, { type: 'APPROVAL', toolCallId: 'w1', approved: true, arguments: { path: 'b.txt' }, by: alice }, at(7)).snapshot;
    expect(s.phase.type).toBe('PAUSED');
    s = step(s, { type: 'RESUME', by: bob }, at(8)).snapshot;
    expect(view(s).recentToolCalls).toEqual([expect.objectContaining({ toolCallId: 'w1', edited: true, decidedBy: alice, decidedAt: at(7) })]);
    expect(view(s).controls.map((c) => [c.event, c.by, c.at, c.edited])).toEqual([
      ['PAUSE', bob, at(6), undefined],
      ['APPROVAL', alice, at(7), true],
      ['RESUME', bob, at(8), undefined],
    ]);
  });

  test('messages, interrupts and aborts are logged with who sent them; refused controls are not; the log keeps the last 50', () => {
    let s = run(snapshot({}), { type: 'START' });
    s = step(s, { type: 'MESSAGE', text: 'also this', by: alice }, at(2)).snapshot;
    s = step(s, { type: 'INTERRUPT', text: 'stop', by: bob }, at(3)).snapshot;
    expect(transition(s, { type: 'RESUME', by: bob }, at(4)).ok).toBe(false);
    for (let i = 0; i < 60; i++) s = step(s, { type: 'MESSAGE', text: `m${i}` }, at(5)).snapshot;
    s = step(s, { type: 'ABORT', reason: 'enough', by: bob }, at(9)).snapshot;
    const controls = view(s).controls;
    expect(controls).toHaveLength(50);
    expect(controls.at(-1)).toEqual({ event: 'ABORT', by: bob, at: at(9), step: s.counters.step });
    expect(controls.at(-2)).toEqual({ event: 'MESSAGE', by: { kind: 'service' }, at: at(5), step: expect.any(Number) });
    expect(controls.some((c) => c.event === 'RESUME')).toBe(false);
  });

  test('a run that decides itself names nobody: an interrupting message and approval.onTimeout reject', () => {
    let s = run(snapshot({ approval: { tools: ['writeFile'], onTimeout: 'reject' }, limits: { approvalTimeoutMs: 1000 } }), { type: 'START' });
    s = step(s, { type: 'MODEL_RESPONDED', response: response('', [call('w1', 'writeFile')]) }, at(5)).snapshot;
    const timedOut = step(s, { type: 'TIMEOUT' }, at(20)).snapshot;
    expect(timedOut.logs.toolCalls[0]).toMatchObject({ toolCallId: 'w1', rejected: true });
    expect(timedOut.logs.toolCalls[0].decidedBy).toBeUndefined();
    const interrupted = step(s, { type: 'INTERRUPT', text: 'never mind', by: alice }, at(6)).snapshot;
    expect(interrupted.logs.toolCalls[0].decidedBy).toBeUndefined();
    expect(view(interrupted).controls).toEqual([{ event: 'INTERRUPT', by: alice, at: at(6), step: 3 }]);
  });
});

describe('approving with edited arguments', () => {
  const schema = { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false };
  const waiting = () => {
    const guarded = { ...call('w1', 'writeFile', { path: 'a.txt', content: 'model text' }), parameters: schema };
    return step(run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' }), { type: 'MODEL_RESPONDED', response: response('', [guarded]) }).snapshot;
  };

  test('the call runs with the edited arguments; its tool message is the output alone, and a user message after it says what ran', () => {
    const s = waiting();
    expect(view(s).pendingApproval[0].parameters).toEqual(schema);
    const r = step(s, { type: 'APPROVAL', toolCallId: 'w1', approved: true, feedback: 'use b.txt', arguments: { path: 'b.txt', content: 'mine' } });
    const edited = JSON.stringify({ path: 'b.txt', content: 'mine' });
    expect(work(r.commands)).toEqual([{ type: 'runTools', calls: [expect.objectContaining({ id: 'w1', arguments: edited, edited: true })] }]);
    expect(r.snapshot.logs.toolCalls.at(-1)).toMatchObject({ toolCallId: 'w1', arguments: edited, edited: true });
    const done = step(r.snapshot, { type: 'TOOLS_DONE', results: [{ toolCallId: 'w1', name: 'writeFile', ok: true, content: 'wrote 4 bytes to b.txt' }] }).snapshot;
    expect(done.messages.slice(-2)).toEqual([
      { role: 'tool', toolCallId: 'w1', content: 'wrote 4 bytes to b.txt' },
      { role: 'user', content: `${APPROVAL_NOTE_HEAD}\n- writeFile (call w1): approved with edited arguments; it ran with ${edited}. Feedback: use b.txt` },
    ]);
    expect(done.approvalNote).toBeNull();
  });

  test('an invalid edit is refused naming the field; an edit needs an approval and a known schema', () => {
    const s = waiting();
    expect(transition(s, { type: 'APPROVAL', toolCallId: 'w1', approved: true, arguments: { path: 3, content: 'x' } }, at(1))).toEqual({
      ok: false,
      error: expect.stringMatching(/^edited arguments of writeFile are invalid: path: /),
    });
    expect(transition(s, { type: 'APPROVAL', toolCallId: 'w1', approved: true, arguments: { path: 'b.txt' } }, at(1))).toMatchObject({ ok: false, error: expect.stringContaining('content') });
    expect(transition(s, { type: 'APPROVAL', toolCallId: 'w1', approved: false, arguments: { path: 'b.txt', content: 'x' } }, at(1))).toEqual({
      ok: false,
      error: 'edited arguments come with an approval, not a rejection',
    });
    const noSchema = step(run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' }), { type: 'MODEL_RESPONDED', response: response('', [call('w2', 'writeFile')]) }).snapshot;
    expect(transition(noSchema, { type: 'APPROVAL', toolCallId: 'w2', approved: true, arguments: { path: 'x' } }, at(1))).toEqual({
      ok: false,
      error: 'arguments of writeFile cannot be edited: the worker sent no schema for it',
    });
  });
});

describe("a person's decisions reach the model in one user message after the turn's tool results", () => {
  const calls = [call('w1', 'writeFile', { path: 'x', content: '1' }), call('w2', 'writeFile', { path: 'y', content: '2' })];
  const decide = (decisions: Array<Omit<Extract<AgentEvent, { type: 'APPROVAL' }>, 'type'>>) => {
    let s = run(snapshot({ approval: { tools: ['writeFile'] } }), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', calls) });
    s = run(s, ...decisions.map((d): AgentEvent => ({ type: 'APPROVAL', ...d })));
    const ran = s.toolRound.pending.filter((c) => !s.toolRound.presetResults.some((r) => r.toolCallId === c.id));
    return run(s, { type: 'TOOLS_DONE', results: ran.map((c) => ({ toolCallId: c.id, name: c.name, ok: true, content: `out ${c.id}` })) }).messages;
  };
  const tools = (messages: RunSnapshot['messages']) => messages.filter((m) => m.role === 'tool').map((m) => m.content);

  test.each<[string, Parameters<typeof decide>[0], string[], string | null]>([
    ['approvals with no feedback: no note', [{ toolCallId: 'w1', approved: true }, { toolCallId: 'w2', approved: true }], ['out w1', 'out w2'], null],
    [
      'an approval with feedback',
      [{ toolCallId: 'w1', approved: true, feedback: 'fine, but ask next time' }, { toolCallId: 'w2', approved: true }],
      ['out w1', 'out w2'],
      '- writeFile (call w1): approved. Feedback: fine, but ask next time',
    ],
    [
      'a rejection with feedback and an approval with feedback, in the order of the calls',
      [{ toolCallId: 'w2', approved: false, feedback: 'not y' }, { toolCallId: 'w1', approved: true, feedback: 'ok' }],
      ['out w1', 'The user rejected this call.'],
      '- writeFile (call w1): approved. Feedback: ok\n- writeFile (call w2): rejected. Feedback: not y',
    ],
    ['a rejection with no feedback: the tool message says it all', [{ toolCallId: 'w1', approved: true }, { toolCallId: 'w2', approved: false }], ['out w1', 'The user rejected this call.'], null],
    ['blank feedback is none', [{ toolCallId: 'w1', approved: true, feedback: '  ' }, { toolCallId: 'w2', approved: true }], ['out w1', 'out w2'], null],
  ])('%s', (_name, decisions, toolMessages, note) => {
    const messages = decide(decisions);
    expect(tools(messages)).toEqual(toolMessages);
    expect(messages.at(-1)).toEqual(note === null ? expect.objectContaining({ role: 'tool' }) : { role: 'user', content: `${APPROVAL_NOTE_HEAD}\n${note}` });
  });

  test("a budget approval's feedback is a user message before the next model call", () => {
    const big = { ...response('answer'), usage: { promptTokens: 1_300, completionTokens: 1_300, totalTokens: 2_600 } };
    let s = run(judged({ budget: { maxTokens: 3_000, reserveOutputTokens: 500, onExceed: 'approve' } }), { type: 'START' });
    s = run(s, { type: 'MODEL_RESPONDED', response: big }, { type: 'CRITIQUE_DONE', decision: { action: 'retry', reason: 'r', confidence: 100 } });
    expect(s.phase.type).toBe('AWAITING_APPROVAL');
    const approved = step(s, { type: 'APPROVAL', toolCallId: 'budget', approved: true, feedback: 'one more try' });
    const request = approved.commands.find((c) => c.type === 'callModel');
    expect(request?.type === 'callModel' && request.request.messages.at(-1)).toEqual({ role: 'user', content: 'The user approved going over the budget. Their feedback: one more try' });
  });
});

describe('a model call the worker refuses for unknown tools', () => {
  const refused = () => {
    const started = run(snapshot(), { type: 'START' });
    expect(started.counters.loops).toBe(1);
    return run(started, { type: 'UNKNOWN_TOOLS', error: 'unknown tools: bogus; this worker has: readFile' });
  };

  test('is not counted, and the reason names the tools', () => {
    const s = refused();
    expect(view(s)).toMatchObject({ state: 'FAILED', loops: 0, stream: null, usage: expect.objectContaining({ modelCalls: 0 }) });
    expect(s.reason?.text).toBe('no model call was made: unknown tools: bogus; this worker has: readFile');
    expect(s.logs.transitions.at(-1)).toMatchObject({ from: 'STREAMING', to: 'FAILED', event: 'UNKNOWN_TOOLS' });
  });
});

describe("a model call waiting for the fleet's provider budget", () => {
  const waiting = () => step(run(snapshot({ priority: 2 }), { type: 'START' }), { type: 'QUOTA_WAIT', waitMs: 30_000, position: 3, queuedAt: 1_700_000_000_000 }, at(1));

  test('stays in its state, shows the wait, and asks again with its place in the queue and its priority', () => {
    const r = waiting();
    expect(r.snapshot.phase.type).toBe('STREAMING');
    expect(r.snapshot.logs.transitions.at(-1)?.event).toBe('START'); // no step of its own
    expect(view(r.snapshot).quotaWait).toEqual({ since: at(1), expectedAt: new Date(Date.parse(at(1)) + 30_000).toISOString(), position: 3 });
    const again = r.commands.find((c) => c.type === 'callModel');
    expect(again).toMatchObject({ request: { callNumber: 1, quota: { queuedAt: 1_700_000_000_000, priority: 2 } } });
    // Asked again, it keeps when it began to wait; the answer clears it.
    const second = step(r.snapshot, { type: 'QUOTA_WAIT', waitMs: 5_000, position: 0, queuedAt: 1_700_000_000_000 }, at(30));
    expect(second.snapshot.quotaWait).toMatchObject({ since: at(1), position: 0 });
    const answered = run(second.snapshot, { type: 'MODEL_RESPONDED', response: response('done') });
    expect(view(answered).quotaWait).toBeNull();
    expect(answered.counters.loops).toBe(1);
  });

  test('a pause requested before the wait is known takes effect at the wait, and RESUME makes the call afresh, counted once', () => {
    const started = run(snapshot(), { type: 'START' });
    const paused = step(run(started, { type: 'PAUSE' }), { type: 'QUOTA_WAIT', waitMs: 30_000, position: 3, queuedAt: 1 }, at(2));
    expect(paused.snapshot.phase).toEqual({ type: 'PAUSED', resumeTo: { type: 'STREAMING' } });
    expect(paused.snapshot.counters.loops).toBe(0);
    expect(work(paused.commands)).toEqual([]);
    const resumed = step(paused.snapshot, { type: 'RESUME' }, at(3));
    expect(work(resumed.commands)).toEqual([{ type: 'callModel', purpose: 'respond', callNumber: 1 }]);
    expect(resumed.snapshot.counters.loops).toBe(1);
  });

  test('a pause while it waits pauses at once and gives the call up', () => {
    const paused = step(waiting().snapshot, { type: 'PAUSE' }, at(2));
    expect(paused.snapshot.phase).toEqual({ type: 'PAUSED', resumeTo: { type: 'STREAMING' } });
    expect(paused.commands).toContainEqual({ type: 'cancelWork' });
    expect([paused.snapshot.counters.loops, paused.snapshot.pauseRequested, paused.snapshot.quotaWait]).toEqual([0, false, null]);
  });

  test('abort reaches a waiting call', () => {
    const aborted = step(waiting().snapshot, { type: 'ABORT', reason: 'user' }, at(2));
    expect(aborted.snapshot.phase.type).toBe('ABORTED');
    expect(aborted.commands).toContainEqual({ type: 'cancelWork' });
  });
});

describe("the Temporal UI's current details count what happened", () => {
  const counts = (s: RunSnapshot) => currentDetails(s).split('\n')[1];
  test.each<[string, () => RunSnapshot, string]>([
    ['a run under way: answered calls, loops against maxLoops', () => run(snapshot(), { type: 'START' }, { type: 'MODEL_RESPONDED', response: response('', [call('r1')]) }), 'step 3, model calls 1, loops 1/50, tool calls 0/100, tokens 15'],
    ['refused for unknown tools: no call counted', () => run(snapshot(), { type: 'START' }, { type: 'UNKNOWN_TOOLS', error: 'unknown tools: x' }), 'step 2, model calls 0, loops 0/50, tool calls 0/100, tokens 0'],
    ['refused for bad input: no limits', () => run(snapshot(), { type: 'INVALID_INPUT', error: 'prompt: empty' }), 'step 1, model calls 0, loops 0, tool calls 0, tokens 0 (input refused: no limits applied)'],
  ])('%s', (_name, make, expected) => {
    expect(counts(make())).toBe(expected);
  });
});

describe('a wait returns to the state it names, each by a row of its own (the tests above take STREAMING)', () => {
  test.each<[string, () => RunSnapshot, AgentEvent, AgentState]>([
    ['a pause before PLANNING resumes into it', () => ({ ...snapshotIn(AgentState.PAUSED), phase: { type: 'PAUSED', resumeTo: { type: 'PLANNING' } } }), { type: 'RESUME' }, AgentState.PLANNING],
    ['a pause before compacting resumes into COMPACTING', () => ({ ...snapshotIn(AgentState.PAUSED), phase: { type: 'PAUSED', resumeTo: { type: 'COMPACTING', returnTo: 'STREAMING' } } }), { type: 'RESUME' }, AgentState.COMPACTING],
    ['a summary made for PLANNING returns to it', () => ({ ...snapshotIn(AgentState.COMPACTING), phase: { type: 'COMPACTING', returnTo: 'PLANNING' } }), sampleEvent('COMPACTED'), AgentState.PLANNING],
    ['a budget extended before PLANNING goes on to it', () => ({ ...snapshot({ plan: true }), phase: { type: 'AWAITING_APPROVAL', pending: [{ toolCallId: 'budget', kind: 'budget', name: 'budget', arguments: '{}' }], then: { type: 'PLANNING' } } }), { type: 'APPROVAL', toolCallId: 'budget', approved: true }, AgentState.PLANNING],
  ])('%s', (_name, make, event, to) => {
    const s = { ...make(), pauseRequested: false };
    const r = step(s, event);
    expect([r.snapshot.phase.type, r.snapshot.logs.transitions.slice(s.logs.transitions.length).map((x) => [x.from, x.to, x.event])]).toEqual([to, [[s.phase.type, to, event.type]]]);
  });
});

// Last in this file: the tests above are the scripted sequences and table-driven snapshots that walk the table.
describe('the table', () => {
  const label = (state: string, r: (typeof ROWS)[AgentState][number]) => `${state} ${r.event} [${r.guard?.name ?? 'else'}] -> ${r.target} (${r.action.name})`;

  /** Ways a state's snapshot differs, combined: each row's guard must hold in one of them (or in a test above). */
  const variants: Array<Array<(s: RunSnapshot) => RunSnapshot>> = [
    [(s) => s, (s) => ({ ...s, pauseRequested: !s.pauseRequested, ...(s.phase.type === 'COMPLETED' ? { phase: { type: 'COMPLETED', conversationOpen: false } } : {}) })],
    [
      (s) => s,
      (s) => ({ ...s, clocks: { ...s.clocks, work: { state: 'none' } } }),
      (s) => ({ ...s, clocks: { ...s.clocks, work: { state: 'running', deadline: at(300) } } }),
      (s) => ({ ...s, clocks: { ...s.clocks, work: { state: 'none' }, approvalDeadline: null } }),
      // The run's total time (limits.totalTimeoutMs) ran out.
      (s) => ({ ...s, clocks: { ...s.clocks, totalDeadline: at(0) } }),
    ],
    [(s) => s, (s) => ({ ...s, quotaWait: { queuedAt: 1, since: at(0), expectedAt: at(5), position: 1 } })],
    [(s) => s, (s) => ({ ...s, counters: { ...s.counters, overflowsInARow: 2, setbacksInARow: 10 }, options: { ...s.options, fallbackModels: ['b'] } })],
    [(s) => s, (s) => ({ ...s, queuedMessages: ['m'] })],
    [
      (s) => s,
      (s) => ({ ...s, toolRound: { ...s.toolRound, lastResults: [{ toolCallId: 'r', name: 'readFile', ok: true, content: 'x' }] } }),
      (s) => ({ ...s, counters: { ...s.counters, failuresInARow: 2 }, toolRound: { ...s.toolRound, lastResults: [{ toolCallId: 'r', name: 'readFile', ok: false, content: 'x' }] } }),
      (s) => ({ ...s, messages: [...s.messages, { role: 'assistant', content: 'the answer' }] }),
    ],
  ];
  const combos = variants.reduce<Array<(s: RunSnapshot) => RunSnapshot>>((acc, list) => acc.flatMap((f) => list.map((g) => (s: RunSnapshot) => g(f(s)))), [(s) => s]);

  test('every row of every state is reached, by a test in this file or from a variant of its state, and leads where it says', () => {
    const missed: string[] = [];
    for (const state of STATES) {
      for (const r of ROWS[state].filter((x) => !firedRows.has(x))) {
        const event = sampleEvent(r.event);
        const found = combos.map((f) => f(snapshotIn(state))).find((s) => matchRow(s, event, at(1)) === r);
        if (!found) {
          missed.push(label(state, r));
          continue;
        }
        const result = transition(found, event, at(1));
        if (r.target === 'rejected') expect(result.ok).toBe(false);
        else expect(result.ok).toBe(true);
      }
    }
    expect(missed).toEqual([]);
  });

  // The way into a model step detours the same for PLANNING as for STREAMING (which the tests above take).
  const intoPlanning = (input: Partial<AgentRunInput>, extra: Partial<RunSnapshot> = {}) => step({ ...snapshot({ plan: true, ...input }), ...extra }, { type: 'START' }).snapshot;
  test.each<[string, () => RunSnapshot, AgentState]>([
    ['the loop limit mid-answer ends it truncated', () => intoPlanning({}, { limits: { ...snapshot().limits, maxLoops: 0 }, counters: { ...snapshot().counters, continuations: 1 } }), AgentState.COMPLETED],
    ['the loop limit fails the run', () => intoPlanning({}, { limits: { ...snapshot().limits, maxLoops: 0 } }), AgentState.FAILED],
    ['the loop limit with onLimit complete completes it', () => intoPlanning({}, { limits: { ...snapshot().limits, maxLoops: 0, onLimit: 'complete' } }), AgentState.COMPLETED],
    ['an approvable budget asks', () => intoPlanning({ budget: { maxTokens: 1, onExceed: 'approve' } }), AgentState.AWAITING_APPROVAL],
    ['a budget fails the run', () => intoPlanning({ budget: { maxTokens: 1 } }), AgentState.FAILED],
    ['a request too large compacts first', () => intoPlanning({ contextWindowTokens: 256 }, { messages: [...snapshot().messages, { role: 'assistant', content: 'x'.repeat(4000) }, { role: 'user', content: 'go on' }] }), AgentState.COMPACTING],
  ])('on the way into PLANNING: %s', (_name, make, state) => {
    expect(make().phase.type).toBe(state);
  });

  test('every eventless row is reached for every state it is a row of', () => {
    const missed = STATES.flatMap((state) => ALWAYS_ROWS[state].map((r) => `${r.action.name} into ${state}`)).filter((k) => !firedEntries.has(k));
    expect(missed).toEqual([]);
  });

  test('within a state, no row for an event follows one without a guard (it could never fire)', () => {
    for (const state of STATES) {
      const events = new Set(ROWS[state].map((r) => r.event));
      for (const event of events) {
        const rows = ROWS[state].filter((r) => r.event === event);
        expect([state, event, rows.findIndex((r) => r.guard === null)]).toEqual([state, event, rows.length - 1]);
      }
    }
  });
});
