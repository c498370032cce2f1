/** Named agents without a server: `defineAgent`'s checks, the worker's registry, and the merge of start fields (pure). */
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { AgentRegistry, defineAgent, defineTool, InvalidAgentDefinitionError, type AgentDefinition } from '../src/activities';
import { unknownAgentMessage } from '../src/common/agents';
import { applyAgent } from '../src/common/apply-agent';
import { FailureType } from '../src/common/failures';
import { parseAgentRunInput } from '../src/common/input';

const weather = defineTool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string() }),
  sideEffects: false,
  execute: async ({ city }) => `sunny in ${city}`,
});

const researcher = defineAgent({
  name: 'researcher',
  instructions: 'You research carefully.',
  tools: ['readFile', weather],
  model: 'research-model',
  limits: { maxLoops: 5, maxToolCalls: 7 },
  critique: 'model',
  approval: { tools: ['weather'] },
});

describe('defineAgent', () => {
  test('returns a valid definition as it was given', () => {
    expect(defineAgent({ name: 'a', instructions: 'Be brief.' })).toEqual({ name: 'a', instructions: 'Be brief.' });
    expect(researcher.tools).toEqual(['readFile', weather]);
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    ['a missing name', { instructions: 'x' }, /^Invalid agent definition: name: /],
    ['a name with spaces', { name: 'my agent', instructions: 'x' }, /"my agent": name: must be 1-64 characters/],
    ['empty instructions', { name: 'a', instructions: '  ' }, /"a": instructions: must be a non-empty string/],
    ['a limit out of range', { name: 'a', instructions: 'x', limits: { maxLoops: 0 } }, /"a": limits\.maxLoops: Too small/],
    ['an unknown limit', { name: 'a', instructions: 'x', limits: { maxLoop: 3 } }, /"a": limits: Unrecognized key: "maxLoop"/],
    ['a bad critique', { name: 'a', instructions: 'x', critique: 'vibes' }, /"a": critique: /],
    ['a budget with no bound', { name: 'a', instructions: 'x', budget: { onExceed: 'fail' } }, /"a": budget: set maxTokens, maxCostUsd or both/],
    ['an unknown field', { name: 'a', instructions: 'x', systemPrompt: 'y' }, /"a": \(input\): Unrecognized key: "systemPrompt"/],
    ['a tool that is not a name', { name: 'a', instructions: 'x', tools: [42] }, /"a": tools\.0: /],
  ])('throws naming the field for %s', (_what, definition, message) => {
    expect(() => defineAgent(definition as unknown as AgentDefinition)).toThrow(InvalidAgentDefinitionError);
    expect(() => defineAgent(definition as unknown as AgentDefinition)).toThrow(message);
  });
});

describe('AgentRegistry', () => {
  const registry = new AgentRegistry([researcher, defineAgent({ name: 'writer', instructions: 'You write.' })]);

  test('resolves a name to the agent as JSON: tool objects become names', () => {
    expect(registry.resolve('researcher')).toEqual({
      name: 'researcher',
      instructions: 'You research carefully.',
      tools: ['readFile', 'weather'],
      model: 'research-model',
      limits: { maxLoops: 5, maxToolCalls: 7 },
      critique: 'model',
      approval: { tools: ['weather'] },
    });
    expect(registry.tools()).toEqual([weather]);
  });

  test('an unknown name is a non-retryable UnknownAgent failure listing the agents there are', () => {
    let failure: unknown;
    try {
      registry.resolve('reseacher');
    } catch (err) {
      failure = err;
    }
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: FailureType.UnknownAgent, nonRetryable: true, message: 'unknown agent "reseacher"; the worker\'s agents: researcher, writer' });
    expect(unknownAgentMessage('x', [])).toBe('unknown agent "x"; the worker has no agents registered');
  });

  test('refuses two agents of one name, and bad definitions that skipped defineAgent', () => {
    expect(() => new AgentRegistry([researcher, researcher])).toThrow('agent "researcher" is registered twice');
    expect(() => new AgentRegistry([{ name: 'x', instructions: '' }])).toThrow(/"x": instructions/);
  });

  test('lists the tools agents name that the worker lacks', () => {
    const lacking = new AgentRegistry([defineAgent({ name: 'a', instructions: 'x', tools: ['readFile', 'nope'], approval: { tools: ['*', 'gone'] } })]);
    expect(lacking.missingTools((name) => name === 'readFile')).toEqual(['agent "a": tool "nope"', 'agent "a": tool "gone"']);
  });
});

describe('applyAgent', () => {
  const spec = new AgentRegistry([researcher]).resolve('researcher');
  const parsed = (start: Record<string, unknown>) => {
    const result = parseAgentRunInput(applyAgent(spec, start));
    if (!result.ok) throw new Error(result.error);
    return result.value;
  };

  test('a start with only a prompt takes everything from the agent, and the run defaults under it', () => {
    const input = parsed({ agent: 'researcher', prompt: 'Find it' });
    expect(input).toMatchObject({
      prompt: 'Find it',
      systemPrompt: 'You research carefully.',
      model: 'research-model',
      tools: ['readFile', 'weather'],
      critique: 'model',
      approval: { tools: ['weather'] },
      plan: false,
      limits: { maxLoops: 5, maxToolCalls: 7, timeoutMs: 300_000, maxRepeats: 3 },
    });
    expect(input).not.toHaveProperty('agent');
  });

  test('scalar fields given at start override the agent, and limits merge key by key', () => {
    const input = parsed({ agent: 'researcher', prompt: 'p', model: 'other', systemPrompt: 'Be quick.', critique: 'rules', limits: { maxLoops: 9, timeoutMs: 60_000 } });
    expect(input).toMatchObject({ model: 'other', systemPrompt: 'Be quick.', critique: 'rules', limits: { maxLoops: 9, maxToolCalls: 7, timeoutMs: 60_000 } });
  });

  test('tools, approval and budget given at start replace the agent\'s whole', () => {
    const input = parsed({ agent: 'researcher', prompt: 'p', tools: ['listFiles'], approval: { tools: ['listFiles'] } });
    expect(input.tools).toEqual(['listFiles']);
    expect(input.approval).toEqual({ tools: ['listFiles'] });
    const withBudget = applyAgent({ name: 'b', instructions: 'x', budget: { maxTokens: 100, maxCostUsd: 1 } }, { prompt: 'p', budget: { maxCostUsd: 2 } });
    expect(withBudget.budget).toEqual({ maxCostUsd: 2 });
  });

  test('compaction merges key by key; an undefined start field counts as not given', () => {
    const merged = applyAgent({ name: 'c', instructions: 'x', compaction: { threshold: 0.5, keepRecentMessages: 4 }, model: 'm' }, {
      prompt: 'p',
      compaction: { keepRecentMessages: 8, threshold: undefined },
      model: undefined,
    });
    expect(merged).toEqual({ prompt: 'p', systemPrompt: 'x', model: 'm', compaction: { threshold: 0.5, keepRecentMessages: 8 } });
  });

  test('a bad start field is still reported by the input schema, naming the field', () => {
    expect(parseAgentRunInput(applyAgent(spec, { agent: 'researcher', prompt: 'p', limits: { maxLoops: -1 } }))).toEqual({
      ok: false,
      error: 'Invalid agentRun input: limits.maxLoops: Too small: expected number to be >=1',
    });
    expect(parseAgentRunInput(applyAgent(spec, { prompt: 'p', limits: 'lots' })).ok).toBe(false);
    expect(parseAgentRunInput(applyAgent(spec, { prompt: 'p', bogus: 1 }))).toMatchObject({ ok: false, error: expect.stringMatching(/bogus/) });
  });

  test('the input schema accepts `agent` as a name and refuses a malformed one', () => {
    expect(parseAgentRunInput({ prompt: 'p', agent: 'researcher' })).toMatchObject({ ok: true, value: { agent: 'researcher' } });
    expect(parseAgentRunInput({ prompt: 'p', agent: 'no spaces' })).toMatchObject({ ok: false, error: expect.stringMatching(/^Invalid agentRun input: agent: must be/) });
  });
});
