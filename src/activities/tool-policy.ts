/**
 * The worker's tool-call policy (seed 000's hook between the model's answer and tool execution): a function that
 * decides, for each call, to allow it, deny it, hold it for approval or rewrite its arguments. It runs inside the
 * model call activity, on the answer's calls, so its verdicts are in the activity's result: recorded, and replayed
 * from history, never asked again. Worker-side code.
 */
import type { ToolCall, ToolPolicyVerdict } from '../common/chat';
import { argumentsProblem } from '../common/input';
import type { ToolRegistry } from './tools/registry';

/** One call, as the policy sees it. */
export interface ToolPolicyCall {
  id: string;
  name: string;
  /** The model's arguments, parsed; null when they are not a JSON object. */
  arguments: Record<string, unknown> | null;
  /** The arguments as the model wrote them. */
  rawArguments: string;
}

/** Where the call comes from. */
export interface ToolPolicyContext {
  workflowId: string;
  /** The run's model call that asked for it (1-based). */
  callNumber: number;
  /** The model that answered. */
  model: string;
}

/**
 * What the policy decides: `allow` runs the call as asked; `deny` answers it with `message` (the model reads it as
 * the tool's result); `approve` holds it for a person, as `approval.tools` would; `rewrite` runs it with `arguments`,
 * which must pass the tool's schema.
 */
export type ToolPolicyDecision =
  | { action: 'allow' }
  | { action: 'deny'; message: string }
  | { action: 'approve'; reason?: string }
  | { action: 'rewrite'; arguments: Record<string, unknown>; reason?: string };

/** A policy may be async (it may ask a service). A policy that throws or answers nonsense denies the call, saying why. */
export type ToolPolicy = (call: ToolPolicyCall, context: ToolPolicyContext) => ToolPolicyDecision | Promise<ToolPolicyDecision>;

/** The answer's calls with the policy's verdicts on them; calls it allowed are returned as they were. */
export async function applyToolPolicy(policy: ToolPolicy, calls: ToolCall[], registry: ToolRegistry, context: ToolPolicyContext): Promise<ToolCall[]> {
  const decided: ToolCall[] = [];
  for (const call of calls) {
    const decision = await Promise.resolve()
      .then(() => policy({ id: call.id, name: call.name, arguments: parsed(call.arguments), rawArguments: call.arguments }, context))
      .catch((err: unknown): ToolPolicyDecision => ({ action: 'deny', message: `Not executed: the tool policy failed: ${err instanceof Error ? err.message : String(err)}` }));
    decided.push(withVerdict(call, decision, registry));
  }
  return decided;
}

function withVerdict(call: ToolCall, decision: ToolPolicyDecision, registry: ToolRegistry): ToolCall {
  const deny = (message: string): ToolCall => ({ ...call, policy: { action: 'deny', message } });
  switch (decision?.action) {
    case 'allow':
      return call;
    case 'deny':
      return typeof decision.message === 'string' && decision.message.trim() ? deny(decision.message) : deny('Not executed: the tool policy denied this call.');
    case 'approve': {
      // The schema lets a person approve with edited arguments, and keeps the call from running inside the model call.
      const parameters = call.parameters ?? registry.schemaOf(call.name);
      const verdict: ToolPolicyVerdict = { action: 'approve', ...(decision.reason ? { reason: decision.reason } : {}) };
      return { ...call, ...(parameters ? { parameters } : {}), policy: verdict };
    }
    case 'rewrite': {
      const schema = registry.schemaOf(call.name);
      if (!schema) return deny(`Not executed: the tool policy rewrote the arguments of ${call.name}, a tool this worker has no schema for.`);
      const problem = argumentsProblem(schema, decision.arguments);
      if (problem) return deny(`Not executed: the tool policy rewrote the arguments of ${call.name} into invalid ones: ${problem}`);
      const verdict: ToolPolicyVerdict = { action: 'rewrite', original: call.arguments, ...(decision.reason ? { reason: decision.reason } : {}) };
      return { ...call, arguments: JSON.stringify(decision.arguments), policy: verdict };
    }
    default:
      return deny(`Not executed: the tool policy answered ${JSON.stringify(decision)?.slice(0, 200)}, not allow, deny, approve or rewrite.`);
  }
}

function parsed(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
