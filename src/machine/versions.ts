/**
 * The machine's versions: each behaviour change that alters a run's history is a new version, defined as the one
 * before with a few named behaviours replaced. A run's version is chosen once, when it starts (from its patches,
 * patches.ts) or when a snapshot from before versions loads (from the patch results it carried), and never changes;
 * the machine and its helpers read the version's definition, never a patch result. Pure data: no imports.
 */

/** The behaviours a version chooses, each by name; the machine and its helpers hold what each name does. */
export interface MachineDefinition {
  version: number;
  /** The patch results (patches.ts `RunPatches`) this version is the first to have. */
  introduces: readonly PatchResult[];
  /** Critique decisions asking for another attempt: `unlimited`, or `endWhenStuck` past `limits.maxRepeats` (guards.ts). */
  setbacks: 'unlimited' | 'endWhenStuck';
  /**
   * `workflowTimer`: one deadline, kept by the workflow's own timer. `workingTime`: the working-time clock stops while
   * a person decides, approval and pause waits have their own, and the machine sets the timer (clocks.ts).
   */
  clocks: 'workflowTimer' | 'workingTime';
  /** Model requests carry the output limit and the tool names the worker must have (`providerLimits`), or not (requests.ts). */
  modelRequest: 'plain' | 'providerLimits';
  /** The model critic's time bound: the model call's, or its own (a slow critic is replaced by the rules). */
  criticTimeouts: 'modelCall' | 'critic';
  /** Messages compaction keeps verbatim: always KEEP_RECENT_MESSAGES, or `compaction.keepRecentMessages`. */
  keepRecent: 'fixedSix' | 'asConfigured';
  /** An answer the output limit cut off: `ignored` (taken as it is), or `continued` by the next call (MAX_CONTINUATIONS). */
  cutOffAnswers: 'ignored' | 'continued';
  /** A `complete` below `critiqueMinConfidence` is `ignored` (taken) or `retried`. */
  criticConfidence: 'ignored' | 'retried';
  /** A compaction's usage adds its `tokens` only, or `tokensAndCost`. */
  compactionUsage: 'tokens' | 'tokensAndCost';
  /** A model step whose request would fill too much of the context window: sent as it is (`never`), or `overThreshold` compacts first. */
  proactiveCompaction: 'never' | 'overThreshold';
  /** The model is told once, near a limit, to conclude (`nearLimit`), or `never`. */
  wrapUp: 'never' | 'nearLimit';
  /** A person's decisions reach the model `inToolResults` (each tool message), or in one `approvalNote` after them. */
  decisionsToModel: 'inToolResults' | 'approvalNote';
  /** A model call refused for unknown tools (no request made): the run fails with the call `counted`, or `uncounted`. */
  unknownTools: 'counted' | 'uncounted';
  /** A model that is gone or refuses the keys: the run `fails`, or `fallsBack` to its next `fallbackModels`. */
  modelUnavailable: 'fails' | 'fallsBack';
  /** `sendMessage` with `interrupt: true` is `refused`, or `stopsWork` in flight for the message. */
  interrupt: 'refused' | 'stopsWork';
  /** A model critic (`critique: 'model'`) judges `answersOnly` (the rules judge tool steps), or `toolStepsToo`. */
  critic: 'answersOnly' | 'toolStepsToo';
  /** A call of a named agent runs `asTool`, or starts a `childRun` under this run's budget (children.ts). */
  agentCalls: 'asTool' | 'childRun';
}

/** The patch results that changed the machine's behaviour (the others change only the workflow's). */
export type PatchResult =
  | 'noProgressGuard'
  | 'realProviders'
  | 'wrapUp'
  | 'approvalNotes'
  | 'unknownToolsUncounted'
  | 'modelFallback'
  | 'interrupt'
  | 'toolCritique'
  | 'parallelAgents';

type Changes = Omit<Partial<MachineDefinition>, 'version' | 'introduces'> & Pick<MachineDefinition, 'introduces'>;

/** Runs begun before `no-progress-guard`. */
const v1: MachineDefinition = {
  version: 1,
  introduces: [],
  setbacks: 'unlimited',
  clocks: 'workflowTimer',
  modelRequest: 'plain',
  criticTimeouts: 'modelCall',
  keepRecent: 'fixedSix',
  cutOffAnswers: 'ignored',
  criticConfidence: 'ignored',
  compactionUsage: 'tokens',
  proactiveCompaction: 'never',
  wrapUp: 'never',
  decisionsToModel: 'inToolResults',
  unknownTools: 'counted',
  modelUnavailable: 'fails',
  interrupt: 'refused',
  critic: 'answersOnly',
  agentCalls: 'asTool',
};

const next = (before: MachineDefinition, changes: Changes): MachineDefinition => ({ ...before, ...changes, version: before.version + 1 });

const v2 = next(v1, { introduces: ['noProgressGuard'], setbacks: 'endWhenStuck' });
const v3 = next(v2, {
  introduces: ['realProviders'],
  clocks: 'workingTime',
  modelRequest: 'providerLimits',
  criticTimeouts: 'critic',
  keepRecent: 'asConfigured',
  cutOffAnswers: 'continued',
  criticConfidence: 'retried',
  compactionUsage: 'tokensAndCost',
  proactiveCompaction: 'overThreshold',
});
const v4 = next(v3, { introduces: ['wrapUp'], wrapUp: 'nearLimit' });
const v5 = next(v4, { introduces: ['approvalNotes', 'unknownToolsUncounted'], decisionsToModel: 'approvalNote', unknownTools: 'uncounted' });
const v6 = next(v5, { introduces: ['modelFallback'], modelUnavailable: 'fallsBack' });
const v7 = next(v6, { introduces: ['interrupt'], interrupt: 'stopsWork' });
const v8 = next(v7, { introduces: ['toolCritique'], critic: 'toolStepsToo' });
const v9 = next(v8, { introduces: ['parallelAgents'], agentCalls: 'childRun' });

/** Every version, oldest first: `MACHINE_VERSIONS[n - 1]` is version n. */
export const MACHINE_VERSIONS: readonly MachineDefinition[] = [v1, v2, v3, v4, v5, v6, v7, v8, v9];

/** The version runs started from this code get. */
export const LATEST_MACHINE_VERSION = MACHINE_VERSIONS.length;

/** A version's definition; an unknown number is a snapshot from newer code (or a bug), refused by name. */
export function machineDefinition(version: number): MachineDefinition {
  const found = MACHINE_VERSIONS[version - 1];
  if (!found) throw new Error(`unknown machine version ${version}: this code knows 1 to ${LATEST_MACHINE_VERSION}`);
  return found;
}

/**
 * The version of a run with these patch results: that of the newest result switched on. Runs switch on every patch
 * their code knew, so this is exact for them; a run recorded from a branch that lacked an older patch (whose
 * behaviour its history never reaches) gets the nearest version that has its newest.
 */
export function versionOfPatches(results: Partial<Record<PatchResult, boolean | undefined>> | undefined): number {
  let version = 1;
  for (const def of MACHINE_VERSIONS) if (def.introduces.some((p) => results?.[p] === true)) version = def.version;
  return version;
}

/** The newest version without a patch's behaviour: that of runs begun just before it. */
export function versionBefore(patch: PatchResult): number {
  const introducing = MACHINE_VERSIONS.find((d) => d.introduces.includes(patch));
  if (!introducing) throw new Error(`no machine version introduces ${patch}`);
  return introducing.version - 1;
}
