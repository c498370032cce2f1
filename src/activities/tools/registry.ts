/**
 * A registry of zod-defined tools. Their JSON schemas go to the model; arguments are validated before a tool
 * runs, and every problem the model can fix (unknown tool, bad JSON, invalid arguments, a tool's own error)
 * comes back to it as the tool result instead of failing the run.
 */
import { z } from 'zod';
import type { ToolCall, ToolResult } from '../../common/chat';
import { describeZodError } from '../../common/input';
import { UNKNOWN_OUTCOME, type ToolLedger } from './ledger';

export interface ToolContext {
  /** Stable across retries of the same call: the key for idempotent side effects. */
  idempotencyKey: string;
  /** Aborted when the call is cancelled (the run aborted, the activity timed out, the worker stopping): stop work then. */
  signal: AbortSignal;
  /** The run's memory scope (`ToolRequest.memory`): what the `remember` and `recall` tools read and write. */
  memory?: { namespace?: string; tenant?: string };
}

export interface Tool<P extends z.ZodObject = z.ZodObject> {
  name: string;
  description: string;
  parameters: P;
  /** Sent to the model as-is instead of the schema derived from `parameters` (tools defined elsewhere, e.g. MCP). */
  jsonSchema?: Record<string, unknown>;
  /** Whether calling it changes the world; approvals and idempotency care. */
  sideEffects: boolean;
  /**
   * A tool without side effects that answers in milliseconds (reading a small file): runs as a local activity inside
   * the workflow task that asked for it, with no task-queue round trip. Never for slow or remote calls.
   */
  local?: boolean;
  /**
   * Longest one call may take (the activity's start-to-close); the tool heartbeats while it runs, so a dead worker is
   * still noticed within seconds. @default 120000
   */
  timeoutMs?: number;
  /**
   * A tool with side effects that stops cleanly when `ctx.signal` aborts (nothing half-done): a user's interrupting
   * message may then stop a call of it, as it stops calls of tools without side effects. @default false
   */
  cancellable?: boolean;
  /** Offered only to runs whose `tools` name it, not to runs that name none (the memory tools). @default false */
  optIn?: boolean;
  /** A named agent given as a tool (activities/agents.ts): offered only to runs that name it, run as a child workflow. */
  agent?: string;
  execute(args: z.output<P>, ctx: ToolContext): Promise<string>;
}

export const defineTool = <P extends z.ZodObject>(tool: Tool<P>): Tool => tool as unknown as Tool;

/** Thrown by a tool for a transient failure that Temporal should retry rather than tell the model about. */
export class RetryableToolError extends Error {
  override name = 'RetryableToolError';
}

/** Tool outputs larger than this are cut, so one call cannot flood the context or the history. */
export const MAX_TOOL_OUTPUT_CHARS = 20_000;

export interface OpenAIFunctionTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  /** Each tool's JSON Schema, converted from zod once: every model call sends it (BENCHMARKS.md, issue 26). */
  private readonly schemas = new Map<string, Record<string, unknown>>();

  /** With a ledger, tools with side effects run at most once per idempotency key. */
  constructor(
    tools: Tool[],
    private readonly ledger?: ToolLedger,
  ) {
    for (const tool of tools) {
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) throw new Error(`invalid tool name "${tool.name}"`);
      if (tool.timeoutMs !== undefined && !(Number.isInteger(tool.timeoutMs) && tool.timeoutMs > 0)) {
        throw new Error(`tool "${tool.name}" has an invalid timeoutMs ${tool.timeoutMs}: a positive whole number of milliseconds`);
      }
      if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
      this.tools.set(tool.name, tool);
    }
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** Whether a call may run as a local activity: a registered tool marked `local` and free of side effects. */
  runsLocally(name: string): boolean {
    const tool = this.tools.get(name);
    return tool?.local === true && !tool.sideEffects;
  }

  /** Whether a call changes nothing: a registered tool without side effects, which may run beside the turn's other such calls. */
  isPure(name: string): boolean {
    const tool = this.tools.get(name);
    return tool !== undefined && !tool.sideEffects;
  }

  /** Whether a user's interrupting message may stop a call mid-way: a registered tool without side effects, or `cancellable`. */
  stoppable(name: string): boolean {
    const tool = this.tools.get(name);
    return tool !== undefined && (!tool.sideEffects || tool.cancellable === true);
  }

  /** How long one call of a registered tool may take, when the tool says; absent: the run's default for tools. */
  timeoutOf(name: string): number | undefined {
    return this.tools.get(name)?.timeoutMs;
  }

  /**
   * The call as the run should schedule it: marked `local` (runsLocally), `pure` (isPure) and with the tool's `timeoutMs`, when they
   * apply, and, for a call that waits for approval (`guarded`), the tool's schema, which edited arguments must pass.
   */
  withHints(call: ToolCall, guarded = false): ToolCall {
    const timeoutMs = this.timeoutOf(call.name);
    const parameters = guarded ? this.schemaOf(call.name) : undefined;
    return {
      ...call,
      ...(this.runsLocally(call.name) ? { local: true as const } : {}),
      ...(this.isPure(call.name) ? { pure: true as const } : {}),
      ...(this.stoppable(call.name) ? { cancellable: true as const } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(parameters ? { parameters } : {}),
      ...(this.tools.get(call.name)?.agent ? { agent: this.tools.get(call.name)!.agent } : {}),
    };
  }

  /** A registered tool's parameters as JSON Schema (what the model is sent). */
  schemaOf(name: string): Record<string, unknown> | undefined {
    const tool = this.tools.get(name);
    if (!tool) return undefined;
    let schema = this.schemas.get(name);
    if (!schema) {
      const { $schema: _ignored, ...converted } = tool.jsonSchema ?? (z.toJSONSchema(tool.parameters) as Record<string, unknown>);
      this.schemas.set(name, (schema = converted));
    }
    // A copy to each caller: an approval's edit check or a request body must not change the next call's schema.
    return structuredClone(schema);
  }

  /** The names, each once, that no registered tool has. */
  missing(names: readonly string[]): string[] {
    return [...new Set(names)].filter((n) => !this.tools.has(n));
  }

  /** The tools a run that names none may use: every tool but named agents and opt-in tools. */
  private byDefault(): string[] {
    return this.names().filter((n) => !this.tools.get(n)!.agent && !this.tools.get(n)!.optIn);
  }

  /** Definitions for the model; `allowed` absent means every tool but named agents and opt-in tools, and unknown names are an error. */
  definitions(allowed?: string[]): OpenAIFunctionTool[] {
    const names = allowed ?? this.byDefault();
    const unknown = this.missing(names);
    if (unknown.length) throw new Error(`unknown tool(s) ${unknown.join(', ')}; registered: ${this.names().join(', ')}`);
    return names.map((name) => ({ type: 'function', function: { name, description: this.tools.get(name)!.description, parameters: this.schemaOf(name)! } }));
  }

  async run(call: ToolCall, ctx: ToolContext, allowed?: string[]): Promise<ToolResult> {
    const result = (ok: boolean, content: string): ToolResult => ({ toolCallId: call.id, name: call.name, ok, content: bound(content) });
    const tool = this.tools.get(call.name);
    const available = allowed ?? this.names().filter((n) => !this.tools.get(n)!.optIn);
    if (!tool || !available.includes(call.name)) {
      return result(false, `Error: unknown tool "${call.name}". Available tools: ${available.join(', ')}.`);
    }
    let raw: unknown;
    try {
      raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
    } catch (err) {
      return result(false, `Error: the arguments are not valid JSON (${(err as Error).message}). Send a JSON object.`);
    }
    const args = tool.parameters.safeParse(raw);
    if (!args.success) return result(false, `Error: invalid arguments for ${call.name}: ${describeZodError(args.error)}`);
    const ledger = tool.sideEffects ? this.ledger : undefined;
    const key = ctx.idempotencyKey;
    const earlier = ledger?.begin(key, call.name, call.arguments);
    if (earlier?.status === 'done') return result(earlier.ok, earlier.content);
    if (earlier?.status === 'unknown') {
      const unknown = result(false, UNKNOWN_OUTCOME);
      ledger!.complete(key, unknown);
      return unknown;
    }
    let outcome: ToolResult;
    try {
      outcome = result(true, await tool.execute(args.data, ctx));
    } catch (err) {
      if (err instanceof RetryableToolError) {
        ledger?.release(key);
        throw err;
      }
      outcome = result(false, `Error: ${(err as Error).message}`);
    }
    ledger?.complete(key, outcome);
    return outcome;
  }
}

function bound(content: string): string {
  if (content.length <= MAX_TOOL_OUTPUT_CHARS) return content;
  return `${content.slice(0, MAX_TOOL_OUTPUT_CHARS)}\n[output truncated: ${content.length - MAX_TOOL_OUTPUT_CHARS} more characters]`;
}
