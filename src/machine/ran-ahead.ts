/**
 * Tool calls the model call ran ahead. The model activity runs the answer's calls of pure `local` tools inside the
 * model call and answers with their results (`ModelResponse.toolResults`, recorded with the response); the machine
 * keeps a result only where it would have run the call at once itself. A call that waits for a person (approval, a
 * policy's hold) or was denied has its result dropped: after the decision it runs as any call does, with the arguments
 * as decided. So an edited call never carries a result of the arguments the model gave. Nor does a call after one with
 * side effects keep a result (`runAhead`): it must see what that call did.
 */
import type { ToolCall, ToolResult } from '../common/chat';
import { runAhead } from '../common/tool-order';
import type { RunSnapshot } from './snapshot';

/** The response's calls as the run holds them pending: each call whose ran-ahead result the machine keeps carries it. */
export function withRanAhead(s: RunSnapshot, calls: ToolCall[], results: ToolResult[] | undefined): ToolCall[] {
  if (!results?.length) return calls;
  const allowed = new Set(runAhead(calls, s.options.approvalTools).map((c) => c.id));
  const kept = (call: ToolCall) => (allowed.has(call.id) ? results.find((r) => r.toolCallId === call.id) : undefined);
  return calls.map((call) => {
    const ranAhead = kept(call);
    return ranAhead ? { ...call, ranAhead } : call;
  });
}
