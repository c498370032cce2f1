/** The CLI and the watch event computation, without a Temporal server: the client is a fake that records calls. */
import type { Client } from '@temporalio/client';
import { humanWatchPrinter, runCli, startInput } from '../src/cli/cli';
import { AgentClient, diffState, type WatchEvent } from '../src/client';
import { parseAgentRunInput } from '../src/common/input';
import type { RunStateView } from '../src/common/messages';
import { initialSnapshot } from '../src/machine/snapshot';
import type { PendingApproval, TransitionRecord } from '../src/common/view';
import { publicView } from '../src/workflows/view';
import type { AgentState } from '../src/common/states';

const T0 = '2026-01-01T10:00:00.000Z';

function baseView(): RunStateView {
  const input = parseAgentRunInput({ prompt: 'p' });
  if (!input.ok) throw new Error(input.error);
  return publicView(initialSnapshot(input.value, T0), false);
}

const view = (over: Partial<RunStateView> = {}): RunStateView => ({ ...baseView(), ...over });
const tr = (from: AgentState, to: AgentState, event: string, second = 1): TransitionRecord => ({
  from,
  to,
  event,
  at: `2026-01-01T10:00:0${second}.000Z`,
});
const stream = (callNumber: number, attempt = 1) => ({ callNumber, attempt });
const approval = (toolCallId: string, decided = false): PendingApproval => ({
  toolCallId,
  kind: 'tool',
  name: 'writeFile',
  arguments: '{"path":"a"}',
  ...(decided ? { decision: { approved: true } } : {}),
});

const start = tr('IDLE', 'STREAMING', 'START', 1);
const responded = tr('STREAMING', 'PROCESSING', 'MODEL_RESPONDED', 2);
const processed = tr('PROCESSING', 'COMPLETED', 'PROCESS', 3);
const toApproval = tr('PROCESSING', 'AWAITING_APPROVAL', 'PROCESS', 3);
const streaming = (text: string, callNumber = 1, attempt = 1) =>
  view({ state: 'STREAMING', step: 1, transitions: [start], stream: stream(callNumber, attempt), partialText: text });

describe('diffState', () => {
  const completed = view({ state: 'COMPLETED', step: 3, transitions: [start, responded, processed], answer: 'done' });

  const cases: Array<[string, RunStateView | undefined, RunStateView, WatchEvent[]]> = [
    ['first view of a new run: nothing yet', undefined, view(), []],
    [
      'first view reports every transition and the text so far',
      undefined,
      streaming('Hel'),
      [{ type: 'transition', transition: start }, { type: 'text', text: 'Hel', callNumber: 1, attempt: 1 }],
    ],
    ['no change', streaming('Hel'), streaming('Hel'), []],
    ['text grows: only the delta', streaming('Hel'), streaming('Hello'), [{ type: 'text', text: 'lo', callNumber: 1, attempt: 1 }]],
    ['a new model call starts fresh, no restart', streaming('Hello', 1), streaming('Bye', 2), [{ type: 'text', text: 'Bye', callNumber: 2, attempt: 1 }]],
    [
      'a retried attempt replaces the shown text',
      streaming('Hello', 1, 1),
      streaming('Hi', 1, 2),
      [
        { type: 'restart', callNumber: 1, attempt: 2 },
        { type: 'text', text: 'Hi', callNumber: 1, attempt: 2 },
      ],
    ],
    ['a retried attempt with no text yet', streaming('Hello', 1, 1), streaming('', 1, 2), [{ type: 'restart', callNumber: 1, attempt: 2 }]],
    ['a retried attempt when nothing was shown: just text', streaming('', 1, 1), streaming('Hi', 1, 2), [{ type: 'text', text: 'Hi', callNumber: 1, attempt: 2 }]],
    [
      'text that is no longer a prefix restarts',
      streaming('Hello'),
      streaming('Help'),
      [
        { type: 'restart', callNumber: 1, attempt: 1 },
        { type: 'text', text: 'Help', callNumber: 1, attempt: 1 },
      ],
    ],
    [
      'the call ended: its transition, no text',
      streaming('Hello'),
      view({ state: 'PROCESSING', step: 2, transitions: [start, responded] }),
      [{ type: 'transition', transition: responded }],
    ],
    [
      'terminal: new transitions, then end',
      streaming('Hello'),
      completed,
      [{ type: 'transition', transition: responded }, { type: 'transition', transition: processed }, { type: 'end', state: completed }],
    ],
    ['already terminal: no second end', completed, completed, []],
    [
      'first view of a finished run ends at once',
      undefined,
      completed,
      [
        { type: 'transition', transition: start },
        { type: 'transition', transition: responded },
        { type: 'transition', transition: processed },
        { type: 'end', state: completed },
      ],
    ],
    [
      'new approvals are reported once, decided ones never',
      view({ state: 'PROCESSING', step: 2, transitions: [start, responded] }),
      view({
        state: 'AWAITING_APPROVAL',
        step: 3,
        transitions: [start, responded, toApproval],
        pendingApproval: [approval('c1'), approval('c2', true)],
      }),
      [{ type: 'transition', transition: toApproval }, { type: 'approval', pending: [approval('c1')] }],
    ],
    [
      'approvals already seen are not repeated',
      view({ state: 'AWAITING_APPROVAL', step: 3, transitions: [start, responded, toApproval], pendingApproval: [approval('c1')] }),
      view({ state: 'AWAITING_APPROVAL', step: 3, transitions: [start, responded, toApproval], pendingApproval: [approval('c1')] }),
      [],
    ],
    [
      'a trimmed transition list: `step` decides what is new',
      view({ step: 5, transitions: [start, start, start, start, start] }),
      view({ step: 7, transitions: [start, responded, processed] }),
      [{ type: 'transition', transition: responded }, { type: 'transition', transition: processed }],
    ],
  ];

  it.each(cases)('%s', (_name, previous, next, expected) => {
    expect(diffState(previous, next)).toEqual(expected);
  });
});

describe('humanWatchPrinter', () => {
  it('prints transitions on their own lines and streamed text inline', () => {
    let out = '';
    const print = humanWatchPrinter((text) => (out += text));
    const events: WatchEvent[] = [
      { type: 'transition', transition: start },
      { type: 'text', text: 'Hel', callNumber: 1, attempt: 1 },
      { type: 'text', text: 'lo\nwor', callNumber: 1, attempt: 1 },
      { type: 'restart', callNumber: 1, attempt: 2 },
      { type: 'text', text: 'Hi', callNumber: 1, attempt: 2 },
      { type: 'transition', transition: responded },
      { type: 'end', state: view({ state: 'FAILED', reason: 'loop limit reached', loops: 2, toolCalls: 1 }) },
    ];
    events.forEach(print);
    const lines = out.split('\n').map((l) => l.replace(/^\d\d:\d\d:\d\d\.\d{3}/, 'HH:MM:SS.mmm'));
    expect(lines).toEqual([
      'HH:MM:SS.mmm  IDLE -> STREAMING (START)',
      '  | Hello',
      '  | wor',
      '  (model call 1 restarted, attempt 2)',
      '  | Hi',
      'HH:MM:SS.mmm  STREAMING -> PROCESSING (MODEL_RESPONDED)',
      'FAILED: loop limit reached',
      '  model calls 0, loops 2, tool calls 1, tokens 0',
      '',
    ]);
  });
});

describe('diffState: tool events', () => {
  it('a tool that started and ended between two polls is reported in order with the transitions', () => {
    const transitions = [
      tr('IDLE', 'STREAMING', 'START', 1),
      tr('STREAMING', 'PROCESSING', 'MODEL_RESPONDED', 2),
      tr('PROCESSING', 'TOOL_EXECUTING', 'PROCESS', 2),
      tr('TOOL_EXECUTING', 'CRITIQUE', 'TOOLS_DONE', 3),
      tr('CRITIQUE', 'STREAMING', 'CRITIQUE_DONE', 3),
    ];
    const tool = { toolCallId: 'r1', name: 'readFile', arguments: '{}', startStep: 3, startedAt: transitions[2].at, endStep: 4, endedAt: transitions[3].at, ok: true, output: 'hi' };
    const previous = view({ state: 'STREAMING', step: 1, transitions: transitions.slice(0, 1) });
    const next = view({ state: 'STREAMING', step: 5, transitions, recentToolCalls: [tool] });
    expect(diffState(previous, next).map((e) => (e.type === 'transition' ? `to:${e.transition.to}` : e.type))).toEqual([
      'to:PROCESSING', 'to:TOOL_EXECUTING', 'toolStart', 'toolEnd', 'to:CRITIQUE', 'to:STREAMING',
    ]);
    expect(diffState(previous, next).find((e) => e.type === 'toolEnd')).toEqual({ type: 'toolEnd', step: 4, toolCallId: 'r1', name: 'readFile', ok: true, durationMs: 1000, output: 'hi', at: transitions[3].at });
    // Seen already: nothing again.
    expect(diffState(next, next).filter((e) => e.type.startsWith('tool'))).toEqual([]);
  });
});

describe('startInput', () => {
  it.each<[string, Parameters<typeof startInput>[1], object]>([
    ['no flags: only the prompt, so defaults apply', {}, { prompt: 'p' }],
    ['--plan text: the free-text plan', { plan: 'text' }, { prompt: 'p', plan: 'text' }],
    [
      'every flag',
      {
        model: 'm',
        system: 's',
        plan: true,
        critique: 'model',
        approveTools: 'writeFile, readFile',
        maxLoops: 3,
        maxToolCalls: 4,
        timeoutMs: 5000,
        tools: 'readFile,',
      },
      {
        prompt: 'p',
        model: 'm',
        systemPrompt: 's',
        plan: 'steps',
        critique: 'model',
        approval: { tools: ['writeFile', 'readFile'] },
        limits: { maxLoops: 3, maxToolCalls: 4, timeoutMs: 5000 },
        tools: ['readFile'],
      },
    ],
    ['one limit only', { maxToolCalls: 9 }, { prompt: 'p', limits: { maxToolCalls: 9 } }],
    ['a custom critic and its timeout', { critique: 'custom:judge', criticTimeoutMs: 30_000 }, { prompt: 'p', critique: { custom: 'judge' }, timeouts: { criticMs: 30_000 } }],
    ['the model call timeouts', { modelCallTimeoutMs: 60_000, modelAttemptTimeoutMs: 20_000, compactionTimeoutMs: 90_000 }, { prompt: 'p', timeouts: { modelCallMs: 60_000, modelAttemptMs: 20_000, compactionMs: 90_000 } }],
    ['a named agent with a flag over it', { agent: 'researcher', maxLoops: 2 }, { prompt: 'p', agent: 'researcher', limits: { maxLoops: 2 } }],
  ])('%s', (_name, flags, expected) => {
    expect(startInput('p', flags)).toEqual(expected);
  });
});

/** A `Client` stand-in: records starts and updates, never talks to a server. */
function fakeTemporal() {
  const executeUpdate = jest.fn(async () => ({ toolCallId: 'c1', approved: true, remaining: 0 }));
  const signal = jest.fn(async () => undefined);
  const workflowStart = jest.fn(async (_type: string, opts: { workflowId: string }) => ({
    workflowId: opts.workflowId,
    firstExecutionRunId: 'run-1',
  }));
  const client = {
    workflow: { start: workflowStart, getHandle: jest.fn((workflowId: string) => ({ workflowId, executeUpdate, signal })) },
  } as unknown as Client;
  return { client, workflowStart, executeUpdate, signal };
}

async function run(argv: string[], temporal = fakeTemporal()) {
  let stdout = '';
  let stderr = '';
  const connect = jest.fn(async () => new AgentClient(temporal.client, 'test-queue'));
  const code = await runCli(argv, { connect, out: (t) => (stdout += t), err: (t) => (stderr += t) });
  return { code, stdout, stderr, connect, ...temporal };
}

describe('cli input validation: exit 1, one line naming the field, nothing started', () => {
  it.each<[string, string[], string]>([
    ['empty prompt', ['start', ''], 'prompt'],
    ['blank prompt', ['start', '   '], 'prompt'],
    ['non-numeric --max-loops', ['start', 'p', '--max-loops', 'abc'], '--max-loops'],
    ['zero --max-loops', ['start', 'p', '--max-loops', '0'], 'limits.maxLoops'],
    ['fractional --max-tool-calls', ['start', 'p', '--max-tool-calls', '1.5'], '--max-tool-calls'],
    ['too small --timeout-ms', ['start', 'p', '--timeout-ms', '10'], 'limits.timeoutMs'],
    ['unknown --critique', ['start', 'p', '--critique', 'vibes'], 'critique'],
    ['a custom critic with no name', ['start', 'p', '--critique', 'custom:'], '--critique (critique.custom)'],
    ['too small --model-call-timeout-ms', ['start', 'p', '--model-call-timeout-ms', '5'], '--model-call-timeout-ms (timeouts.modelCallMs): must be at least 1000 ms'],
    ['empty --approve-tools', ['start', 'p', '--approve-tools', ','], 'approval.tools'],
    ['--approve-tools a tool --tools leaves out', ['start', 'x', '--tools', 'listFiles', '--approve-tools', 'readFile'], "--approve-tools (approval.tools): readFile is not among the run's tools (listFiles)"],
    ['missing prompt', ['start'], 'prompt'],
  ])('%s', async (_name, argv, field) => {
    const { code, stdout, stderr, connect, workflowStart } = await run(argv);
    expect(code).toBe(1);
    expect(stderr).toContain(field);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stdout).toBe('');
    expect(connect).not.toHaveBeenCalled();
    expect(workflowStart).not.toHaveBeenCalled();
  });

  it.each<[string, string[], string]>([
    ['empty toolCallId', ['approve', 'wf', ''], 'toolCallId'],
    ['blank message', ['send', 'wf', '  '], 'text'],
    ['unknown list state', ['list', '--state', 'SLEEPING'], 'state'],
    ['non-numeric list limit', ['list', '--limit', 'many'], '--limit'],
    ['a diff step that is not a number', ['diff', 'wf', 'a', '4'], 'stepA must be a step number'],
  ])('%s: nothing sent', async (_name, argv, field) => {
    const { code, stderr, executeUpdate } = await run(argv);
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^error: .*${field}`));
    expect(executeUpdate).not.toHaveBeenCalled();
  });

  it('an unknown command exits 1', async () => {
    const { code, stderr } = await run(['frobnicate']);
    expect(code).toBe(1);
    expect(stderr).toContain("unknown command 'frobnicate'");
  });
});

describe('cli start', () => {
  it('starts the workflow with the input, the search attribute and a summary', async () => {
    const prompt = `Summarize   the repository\n${'x'.repeat(100)}`;
    const { code, stdout, workflowStart } = await run(['start', prompt, '--max-loops', '7', '--id', 'agent-test', '--json']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ type: 'started', workflowId: 'agent-test', runId: 'run-1' });
    const [type, opts] = workflowStart.mock.calls[0] as unknown as [string, Record<string, any>];
    expect(type).toBe('agentRun');
    expect(opts.taskQueue).toBe('test-queue');
    expect(opts.workflowId).toBe('agent-test');
    // As given: the worker fills in defaults.
    expect(opts.args).toEqual([{ prompt, limits: { maxLoops: 7 } }]);
    expect(opts.typedSearchAttributes).toEqual([{ key: { name: 'AgentState', type: 'KEYWORD' }, value: 'IDLE' }]);
    expect(opts.staticSummary).toHaveLength(80);
    expect(opts.staticSummary).toMatch(/^Summarize the repository x+\.\.\.$/);
  });

  it('makes up a short workflow id and prints it', async () => {
    const { code, stdout, workflowStart } = await run(['start', 'hello']);
    expect(code).toBe(0);
    const id = (workflowStart.mock.calls[0] as unknown as [string, { workflowId: string }])[1].workflowId;
    expect(id).toMatch(/^agent-[0-9a-f]{12}$/);
    expect(stdout).toBe(`started ${id} (run run-1)\n`);
  });
});

describe('AgentClient.start', () => {
  it('throws InvalidAgentInputError naming the field and starts nothing', async () => {
    const { client, workflowStart } = fakeTemporal();
    const agent = new AgentClient(client, 'q');
    await expect(agent.start({ prompt: 'p', limits: { maxLoops: -1 } })).rejects.toMatchObject({
      name: 'InvalidAgentInputError',
      message: expect.stringContaining('limits.maxLoops'),
    });
    expect(workflowStart).not.toHaveBeenCalled();
  });

  it('refuses approval tools that the run may not call, naming them, and starts nothing', async () => {
    const { client, workflowStart } = fakeTemporal();
    const agent = new AgentClient(client, 'q');
    await expect(agent.start({ prompt: 'x', tools: ['listFiles'], approval: { tools: ['readFile', 'writeFile', '*'] } })).rejects.toMatchObject({
      name: 'InvalidAgentInputError',
      message: expect.stringContaining("approval.tools: readFile, writeFile are not among the run's tools (listFiles)"),
    });
    expect(workflowStart).not.toHaveBeenCalled();
  });
});

describe('cli graph', () => {
  it('prints the machine from its rows as Mermaid: guards on the edges, entry rows behind a choice node, no connection', async () => {
    const { code, stdout, connect } = await run(['graph']);
    expect([code, connect.mock.calls.length]).toEqual([0, 0]);
    const lines = stdout.split('\n');
    expect(lines[0]).toBe('stateDiagram-v2');
    expect(lines).toEqual(
      expect.arrayContaining([
        '  STREAMING --> PROCESSING: MODEL_RESPONDED',
        '  PROCESSING --> AWAITING_APPROVAL: PROCESS [needsApproval]',
        '  PROCESSING --> enter_TOOL_EXECUTING: PROCESS',
        '  state enter_STREAMING <<choice>>',
        '  enter_STREAMING --> AWAITING_APPROVAL: [overBudgetAndApprovable]',
        '  enter_STREAMING --> STREAMING: else',
        '  PAUSED --> ABORTED: TIMEOUT [pausedTooLong]',
        '  STREAMING --> STREAMING: MESSAGE',
      ]),
    );
    // A row that refuses its event is no edge.
    expect(stdout).not.toContain('rejected');
  });

  it('prints DOT, leaves out the rows that keep the state on request, and refuses an unknown format', async () => {
    const dot = await run(['graph', '--format', 'dot', '--no-self-loops']);
    expect(dot.stdout).toMatch(/^digraph agentRun \{/);
    expect(dot.stdout).toContain('"CRITIQUE" -> "enter_PLANNING" [label="CRITIQUE_DONE [decidesReplan]"];');
    expect(dot.stdout).not.toContain('"STREAMING" -> "STREAMING"');
    const json = await run(['graph', '--json']);
    expect(JSON.parse(json.stdout).edges).toEqual(expect.arrayContaining([{ from: 'IDLE', event: 'START', guard: 'plans', action: 'startRun', to: 'PLANNING' }]));
    const bad = await run(['graph', '--format', 'svg']);
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining("argument 'svg' is invalid. expected one of mermaid, dot")]);
  });
});
