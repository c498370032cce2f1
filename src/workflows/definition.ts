/**
 * The run's definition: what the interpreter (agent-run.ts) takes from it, and the one place that chooses it. Today
 * there is one, the 1.0 baseline. A change that must reach runs already started on unversioned workers (or under
 * AUTO_UPGRADE) ships as a new frozen definition beside it, chosen here once, at the start of a run, by a single
 * `patched()`; no other file reads a patch (docs/deployment.md, "Versioning"). A road an activity's answer chooses
 * (the budget's `waitsApart`: effects.ts) needs none: the answer is in history, and a replay takes the same road.
 */
import { resumeAt, transition } from '../machine/machine';
import { blankSnapshot, initialSnapshot } from '../machine/snapshot';
import type { RunTimeouts } from '../common/input';
import { createEffects, type Effects, type WhatIf } from './effects';
import { createPublisher, type Publisher } from './publisher';
import { createRunTimer, type RunTimer } from './run-timer';

/** Everything that could differ between two frozen definitions; the interpreter branches on none of it. */
export interface RunDefinition {
  /** The machine: how an event moves a run. */
  transition: typeof transition;
  /** Where a run starts: from valid input, or from input that failed validation. */
  initialSnapshot: typeof initialSnapshot;
  blankSnapshot: typeof blankSnapshot;
  /** The work a carried snapshot (continue-as-new, fork) starts with (`commandsFor`, and the timer on its clocks). */
  resumeAt: typeof resumeAt;
  /**
   * How commands run as activities, timers and child runs; `tenant`: the run's (its tasks' fairness key); `timeouts`:
   * the run's (its snapshot's), read as each activity starts; `priority`: the run's, which its child runs inherit.
   */
  createEffects: (whatIf?: WhatIf, tenant?: string, timeouts?: () => RunTimeouts | undefined, priority?: number) => Effects;
  /** Where the run shows its state: search attribute, current details, memo. */
  createPublisher: () => Publisher;
  createRunTimer: (fire: () => void) => RunTimer;
}

/** Version 1.0: the behaviour every run has had since the baseline; its histories are test/histories fixtures. */
const V1_0: RunDefinition = { transition, initialSnapshot, blankSnapshot, resumeAt, createEffects, createPublisher, createRunTimer };

/** The run's definition, chosen once before the run's first await; with a second definition, its `patched()` goes here. */
export function chooseDefinition(): RunDefinition {
  return V1_0;
}
