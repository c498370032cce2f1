/**
 * Named agents, worker side: `defineAgent` checks a definition when it is written, and the worker's `AgentRegistry`
 * answers the `resolveAgent` activity with the agent's JSON spec, which the run merges under its start fields.
 */
import { ApplicationFailure } from '@temporalio/common';
import { checkAgentSpec, unknownAgentMessage, type AgentSpec } from '../common/agents';
import { FailureType } from '../common/failures';
import { z } from 'zod';
import type { Tool } from './tools/registry';

/** Agent names that can be tool names too: the others cannot be given to a run as tools. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** What a parent's model sends a named agent: the task, in its own words. */
const AgentToolParameters = z.object({ prompt: z.string().min(1).describe('The task for this agent, with everything it needs to know.') });

/**
 * A named agent: `instructions` (its system prompt), the tools it may use and any of the run's settings (`model`,
 * `limits`, `approval`, `critique`, `budget`, `plan`, `maxOutputTokens`, ...). `tools` takes names of the worker's
 * tools or tool objects (`defineTool`), which the worker then registers beside its own.
 */
export interface AgentDefinition extends Omit<AgentSpec, 'tools'> {
  /** The tools of the agent's runs; absent: every tool of the worker. Objects join the worker's registry. */
  tools?: Array<string | Tool>;
}

/** Thrown by `defineAgent` and by a worker given a bad agent: names the agent and each bad field. */
export class InvalidAgentDefinitionError extends Error {
  override name = 'InvalidAgentDefinitionError';
}

/** The definition as JSON: tool objects become their names. */
export function agentSpec(definition: AgentDefinition): AgentSpec {
  const { tools, ...rest } = definition;
  return { ...rest, ...(tools !== undefined ? { tools: tools.map((t) => (typeof t === 'string' ? t : t?.name)) } : {}) };
}

/**
 * Checks an agent definition at once, so a bad one fails where it is written, naming the field
 * (e.g. `Invalid agent definition "researcher": limits.maxLoops: Too small: expected number to be >=1`).
 */
export function defineAgent<D extends AgentDefinition>(definition: D): D {
  const checked = checkAgentSpec(agentSpec(definition));
  if (!checked.ok) {
    const name = typeof definition?.name === 'string' ? ` "${definition.name}"` : '';
    throw new InvalidAgentDefinitionError(checked.error.replace('Invalid agent definition', `Invalid agent definition${name}`));
  }
  return definition;
}

/** The worker's agents by name. Checks each definition, and that no two share a name. */
export class AgentRegistry {
  private readonly specs = new Map<string, AgentSpec>();
  private readonly toolObjects: Tool[] = [];

  constructor(definitions: readonly AgentDefinition[] = []) {
    for (const definition of definitions) {
      defineAgent(definition);
      if (this.specs.has(definition.name)) throw new InvalidAgentDefinitionError(`agent "${definition.name}" is registered twice`);
      this.specs.set(definition.name, structuredClone(agentSpec(definition)));
      for (const tool of definition.tools ?? []) if (typeof tool !== 'string' && !this.toolObjects.includes(tool)) this.toolObjects.push(tool);
    }
  }

  names(): string[] {
    return [...this.specs.keys()];
  }

  /** Tool objects the agents brought, each once, for the worker's tool registry. */
  tools(): Tool[] {
    return [...this.toolObjects];
  }

  /**
   * Every tool an agent names (in `tools` or `approval.tools`) that `hasTool` does not know, as `agent: tool` lines;
   * the worker refuses to start with any, rather than fail the agent's runs one by one.
   */
  missingTools(hasTool: (name: string) => boolean): string[] {
    return [...this.specs.values()].flatMap((spec) =>
      [...new Set([...(spec.tools ?? []), ...(spec.approval?.tools ?? []).filter((t) => t !== '*')])]
        .filter((tool) => !hasTool(tool))
        .map((tool) => `agent "${spec.name}": tool "${tool}"`),
    );
  }

  /**
   * Each agent whose name can be a tool name and is not one of `taken`, as a tool a run offers its model only when it
   * names it in `tools`. A call of it starts a child `agentRun` of the agent (workflows/effects.ts); `execute` answers
   * only a run without the `parallel-agents` patch, which would otherwise run it as a plain tool.
   */
  asTools(taken: (name: string) => boolean): Tool[] {
    return [...this.specs.values()]
      .filter((spec) => TOOL_NAME.test(spec.name) && !taken(spec.name))
      .map((spec) => ({
        name: spec.name,
        description: spec.description ?? `Agent ${spec.name}: ${spec.instructions.slice(0, 300)}`,
        parameters: AgentToolParameters,
        sideEffects: true,
        agent: spec.name,
        execute: () => Promise.reject(new Error(`agent ${spec.name} runs as a child workflow; this run's worker code predates that`)),
      }));
  }

  /** The agent's spec, or a non-retryable `UnknownAgent` failure naming the agents there are. */
  resolve(name: string): AgentSpec {
    const spec = this.specs.get(name);
    if (!spec) throw ApplicationFailure.create({ type: FailureType.UnknownAgent, message: unknownAgentMessage(name, this.names()), nonRetryable: true });
    return structuredClone(spec);
  }
}
