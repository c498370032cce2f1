/**
 * The run's patches: each behaviour change that alters history is switched on by a `patched()` marker, read once
 * when a run starts, so that runs begun before the change replay with the behaviour they had. How a patch is retired:
 * README, "Tests".
 */
import { patched as workflowPatched } from '@temporalio/workflow';

/** Every patch of `agentRun`, by name. */
export const Patch = {
  /** Ends runs whose critic keeps asking for another attempt (see guards.isStuckInSetbacks). */
  NoProgressGuard: 'no-progress-guard',
  /** Continues as new when the history grows long. */
  ContinueAsNew: 'continue-as-new',
  /** Search attribute and details written before a wait, not on every transition; `local` tools as local activities. */
  LeanSteps: 'lean-steps',
  /** Model calls send a reference to the stored conversation and only the messages since (chain.ts). */
  ConversationChain: 'conversation-chain',
  /** Working-time and approval clocks in the machine, continued cut-off answers, proactive compaction, critic confidence. */
  RealProviders: 'real-providers',
  /** The model is told once, near a limit (limits.wrapUpAt), to conclude with what it has. */
  WrapUp: 'wrap-up',
  /** A copy of the state view in the memo when the run waits for a person or ends, served with no worker running. */
  StateMemo: 'state-memo',
  /** `local` tool calls run inside the model call that asked for them; no local activity, no second activation (effects.ts). */
  InlineLocalTools: 'inline-local-tools',
  /**
   * Every patch above at once, for runs started from this code on: one marker (and one `TemporalChangeVersion`
   * upsert) a run instead of eight. Runs started before it find no such marker and read each patch as before.
   */
  AllOf2026_11: 'features-2026-11',
  // The two below came with `AllOf2026_12` and are only ever read through it: no run recorded their own markers.
  /**
   * A person's decisions reach the model in one user message after the turn's tool results (feedback, edited
   * arguments); tool messages hold the tool's output only.
   */
  ApprovalNotes: 'approval-notes',
  /** A model call refused for unknown tools (no request made) is not counted, and the run's reason names the tools. */
  UnknownToolsUncounted: 'unknown-tools-uncounted',
  /**
   * Every patch above at once, for runs started from this code on; runs that recorded `features-2026-11` read it
   * and keep the two patches above off.
   */
  AllOf2026_12: 'features-2026-12',
  /** A model that is gone, refuses the keys or has spent its quota or retries moves the run to its next `fallbackModels`. */
  ModelFallback: 'model-fallback',
  /** `sendMessage` with `interrupt: true` stops the work in flight for the message (machine.ts, INTERRUPT); refused before. */
  Interrupt: 'interrupt-2026-12',
  /** With `critique: 'model'`, the model critic judges tool steps too (it reads their results); the rules did before. */
  ToolCritique: 'model-critic-tools',
  /** Calls of named agents given as tools start child runs, in parallel, under the parent's budget (effects.ts, runChild). */
  ParallelAgents: 'parallel-agents',
  /**
   * Every patch above at once, for runs started from this code on: one marker (and one `TemporalChangeVersion`
   * upsert) a run instead of five of each, 8 history events fewer. Runs started before it find no such marker and read each
   * patch as before.
   */
  AllOf2026_13: 'features-2026-13',
  // Came with `AllOf2026_13` and is only ever read through it: no run recorded its own marker.
  /** A step makes fewer promises and microtask turns: the model call's outcome in one `then`, tools it ran at once (effects.ts). */
  DirectSteps: 'direct-steps',
  /**
   * A model call ended by its activity timeouts moves the run to its next `fallbackModels`; it failed the run before.
   * Asked where a call timed out (effects.ts, modelCallFailure), not at the start, so it is not in `features-2026-13`.
   */
  ModelTimeoutFallback: 'model-timeout-fallback',
} as const;

/** What each patch decided for this run, read once at its start. */
export interface RunPatches {
  noProgressGuard: boolean;
  realProviders: boolean;
  lean: boolean;
  inlineLocalTools: boolean;
  conversationChain: boolean;
  wrapUp: boolean;
  stateMemo: boolean;
  approvalNotes: boolean;
  unknownToolsUncounted: boolean;
  modelFallback: boolean;
  interrupt: boolean;
  toolCritique: boolean;
  parallelAgents: boolean;
  directSteps: boolean;
  /** Asked only when the run is about to continue as new (its marker goes where that happens): undefined until then. */
  continueAsNew: boolean | undefined;
}

/** `patched`: Temporal's in a workflow; a test passes the markers a recorded history holds. */
export function readPatches(patched: (id: string) => boolean = workflowPatched): RunPatches {
  // Runs before it did not ask for it: when replayed, a patch with no marker is off and records none.
  if (patched(Patch.AllOf2026_13)) return { ...ALL_OF_2026_13 }; // a copy: module state is shared by the runs of a reused context
  // Asked first in runs of model-fallback, then the dated ones, then interrupt-2026-12, model-critic-tools and
  // parallel-agents: the order the runs that recorded these markers asked for them (each asks only those it knows).
  const modelFallback = patched(Patch.ModelFallback);
  const dated = readDatedPatches(patched);
  const interrupt = patched(Patch.Interrupt);
  const toolCritique = patched(Patch.ToolCritique);
  return { ...dated, modelFallback, interrupt, toolCritique, parallelAgents: patched(Patch.ParallelAgents), directSteps: false };
}

const ALL_OF_2026_13: RunPatches = {
  noProgressGuard: true,
  realProviders: true,
  lean: true,
  inlineLocalTools: true,
  conversationChain: true,
  wrapUp: true,
  stateMemo: true,
  approvalNotes: true,
  unknownToolsUncounted: true,
  modelFallback: true,
  interrupt: true,
  toolCritique: true,
  parallelAgents: true,
  directSteps: true,
  continueAsNew: true,
};

function readDatedPatches(patched: (id: string) => boolean): Omit<RunPatches, 'modelFallback' | 'interrupt' | 'toolCritique' | 'parallelAgents' | 'directSteps'> {
  const all2026_11 = { noProgressGuard: true, realProviders: true, lean: true, inlineLocalTools: true, conversationChain: true, wrapUp: true, stateMemo: true, continueAsNew: true };
  if (patched(Patch.AllOf2026_12)) return { ...all2026_11, approvalNotes: true, unknownToolsUncounted: true };
  if (patched(Patch.AllOf2026_11)) return { ...all2026_11, approvalNotes: false, unknownToolsUncounted: false };
  // In the order the runs that recorded these markers asked for them.
  const noProgressGuard = patched(Patch.NoProgressGuard);
  const realProviders = patched(Patch.RealProviders);
  const lean = patched(Patch.LeanSteps);
  const inlineLocalTools = lean && patched(Patch.InlineLocalTools);
  const conversationChain = patched(Patch.ConversationChain);
  const wrapUp = patched(Patch.WrapUp);
  const stateMemo = patched(Patch.StateMemo);
  return { noProgressGuard, realProviders, lean, inlineLocalTools, conversationChain, wrapUp, stateMemo, approvalNotes: false, unknownToolsUncounted: false, continueAsNew: undefined };
}

