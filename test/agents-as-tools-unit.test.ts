/**
 * Named agents as tools, without a server: the machine's runTools command for calls of agents (the child run and the
 * budget it gets), the parent's record of its children and their usage against its budget, and the registry's offer
 * of agents as tools. The end-to-end runs are in test/agents-as-tools.test.ts.
 */
import { AgentRegistry, defineAgent } from '../src/activities';
import { ToolRegistry } from '../src/activities/tools/registry';
import type { ModelResponse, ToolCall, ToolResult } from '../src/common/chat';
import { parseAgentRunInput, type AgentRunInput } from '../src/common/input';
import { transition, type AgentCommand, type AgentEvent } from '../src/machine/machine';
import { initialSnapshot, type RunSnapshot } from '../src/machine/snapshot';
import { publicView } from '../src/workflows/view';

const T0 = '2026-01-01T00:00:00.000Z';

function snapshot(input: Partial<AgentRunInput>): RunSnapshot {
  const parsed = parseAgentRunInput({ prompt: 'do the task', ...input });
  if (!parsed.ok) throw new Error(parsed.error);
  const s = initialSnapshot(parsed.value, T0);
  return { ...s, workflowId: 'parent' };
}

function step(s: RunSnapshot, e: AgentEvent): { snapshot: RunSnapshot; commands: AgentCommand[] } {
  const r = transition(s, e, T0);
  if (!r.ok) throw new Error(r.error);
  return r;
}

const call = (id: string, name: string, agent?: string): ToolCall => ({ id, name, arguments: JSON.stringify({ prompt: `task ${id}` }), ...(agent ? { agent } : {}) });
const response = (toolCalls: ToolCall[], totalTokens: number): ModelResponse => ({
  text: '',
  toolCalls,
  usage: { promptTokens: totalTokens, completionTokens: 0, totalTokens },
  finishReason: toolCalls.length ? 'tool_calls' : 'stop',
  model: 'm',
});
const childResult = (id: string, workflowId: string, totalTokens: number): ToolResult => ({
  toolCallId: id,
  name: 'helper',
  ok: true,
  content: 'done',
  child: { workflowId, agent: 'helper', state: 'COMPLETED', usage: { promptTokens: totalTokens, completionTokens: 0, totalTokens, modelCalls: 1, costUsd: 0 } },
});

const runTools = (commands: AgentCommand[]) => commands.flatMap((c) => (c.type === 'runTools' ? c.requests : []));

describe('calls of named agents', () => {
  test('each call of an agent carries its child run, with what remains of the budget; other calls do not', () => {
    let s = step(snapshot({ model: 'm', budget: { maxTokens: 1_000, reserveOutputTokens: 10, onExceed: 'approve' } }), { type: 'START' }).snapshot;
    const r = step(s, { type: 'MODEL_RESPONDED', response: response([call('a', 'helper', 'helper'), call('b', 'helper', 'helper'), call('c', 'readFile')], 300) });
    s = r.snapshot;
    expect(s.phase.type).toBe('TOOL_EXECUTING');
    const requests = runTools(r.commands);
    expect(requests.map((q) => q.child)).toEqual([
      { workflowId: 'parent/helper-1', agent: 'helper', budget: expect.objectContaining({ maxTokens: 700, onExceed: 'approve', reserveOutputTokens: 10 }) },
      { workflowId: 'parent/helper-2', agent: 'helper', budget: expect.objectContaining({ maxTokens: 700 }) },
      undefined,
    ]);
    expect(publicView(s, false).children).toEqual([
      { workflowId: 'parent/helper-1', agent: 'helper', state: 'RUNNING', usage: expect.objectContaining({ totalTokens: 0 }) },
      { workflowId: 'parent/helper-2', agent: 'helper', state: 'RUNNING', usage: expect.objectContaining({ totalTokens: 0 }) },
    ]);
  });

  test("the children's usage counts against the parent's, and a budget they spent waits for approval before the next call", () => {
    let s = step(snapshot({ model: 'm', budget: { maxTokens: 1_000, reserveOutputTokens: 10, onExceed: 'approve' } }), { type: 'START' }).snapshot;
    s = step(s, { type: 'MODEL_RESPONDED', response: response([call('a', 'helper', 'helper'), call('b', 'helper', 'helper')], 300) }).snapshot;
    const { snapshot: after } = step(s, {
      type: 'TOOLS_DONE',
      results: [childResult('a', 'parent/helper-1', 400), childResult('b', 'parent/helper-2', 350)],
    });
    expect(after.usage.totalTokens).toBe(1_050);
    expect(after.phase.type).toBe('AWAITING_APPROVAL');
    expect(publicView(after, false).pendingApproval).toEqual([expect.objectContaining({ toolCallId: 'budget', kind: 'budget' })]);
    expect(publicView(after, false).children.map((c) => [c.state, c.usage.totalTokens])).toEqual([
      ['COMPLETED', 400],
      ['COMPLETED', 350],
    ]);
  });

  test('a child that ends without a record of its start (a run carried on in its tool step) is recorded as it ends', () => {
    let s = step(snapshot({ model: 'm' }), { type: 'START' }).snapshot;
    s = step(s, { type: 'MODEL_RESPONDED', response: response([call('a', 'helper', 'helper')], 10) }).snapshot;
    s = { ...s, children: [] };
    const after = step(s, { type: 'TOOLS_DONE', results: [childResult('a', 'fork/helper-1', 20)] }).snapshot;
    expect(publicView(after, false).children).toEqual([expect.objectContaining({ workflowId: 'fork/helper-1', state: 'COMPLETED' })]);
    expect(after.usage.totalTokens).toBe(30);
  });

  test('a spent budget leaves a child the smallest one, so it stops (or asks) at its first call', () => {
    const s = step(snapshot({ model: 'm', budget: { maxTokens: 100, reserveOutputTokens: 0, onExceed: 'approve' } }), { type: 'START' }).snapshot;
    const r = step(s, { type: 'MODEL_RESPONDED', response: response([call('a', 'helper', 'helper')], 150) });
    expect(runTools(r.commands)[0].child?.budget).toMatchObject({ maxTokens: 1 });
  });
});

describe('the registry', () => {
  const agents = new AgentRegistry([
    defineAgent({ name: 'helper', description: 'Helps.', instructions: 'Help.' }),
    defineAgent({ name: 'dotted.name', instructions: 'Not a tool name.' }),
    defineAgent({ name: 'readFile', instructions: 'Shares a tool name.' }),
  ]);

  test('offers agents as tools only to runs that name them; names that cannot be tool names, or that a tool has, are left out', () => {
    const tools = agents.asTools((name) => name === 'readFile');
    expect(tools.map((t) => t.name)).toEqual(['helper']);
    const registry = new ToolRegistry(tools);
    expect(registry.definitions()).toEqual([]);
    expect(registry.definitions(['helper'])).toEqual([
      { type: 'function', function: { name: 'helper', description: 'Helps.', parameters: expect.objectContaining({ required: ['prompt'] }) } },
    ]);
    expect(registry.withHints({ id: 'x', name: 'helper', arguments: '{}' }).agent).toBe('helper');
  });
});
