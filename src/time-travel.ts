/** Time travel over a run's steps: the pure part of `agent history` and `agent diff`. */
import type { RunStateView } from './common/messages';
import type { TransitionRecord } from './common/view';

export interface StepRecord extends TransitionRecord {
  step: number;
}

/** The run's steps as far as its state still lists them (a continued run keeps the recent end). */
export function stepsOf(view: RunStateView): StepRecord[] {
  const first = view.step - view.transitions.length + 1;
  return view.transitions.map((t, i) => ({ step: first + i, ...t }));
}

export interface SnapshotDiff {
  from: number;
  to: number;
  /** Top-level fields whose value differs, with both values. */
  changed: Array<{ field: string; before: unknown; after: unknown }>;
  /** Messages present at `to` and not at `from`, when both carry the conversation and it only grew. */
  addedMessages?: unknown[];
}

/** Fields that describe how the snapshot is kept rather than what the run did. */
const SKIPPED = new Set(['transitions', 'messages', 'stateSince']);

export function diffSnapshots(a: RunStateView, b: RunStateView): SnapshotDiff {
  const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((f) => !SKIPPED.has(f)).sort();
  const changed = fields
    .map((field) => ({ field, before: (a as unknown as Record<string, unknown>)[field], after: (b as unknown as Record<string, unknown>)[field] }))
    .filter(({ before, after }) => JSON.stringify(before) !== JSON.stringify(after));
  const diff: SnapshotDiff = { from: a.step, to: b.step, changed };
  if (a.messages && b.messages) {
    const grew = a.messages.every((m, i) => JSON.stringify(m) === JSON.stringify(b.messages![i]));
    if (grew) diff.addedMessages = b.messages.slice(a.messages.length);
  }
  return diff;
}

const clip = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function formatDiff(diff: SnapshotDiff): string {
  const lines = [`step ${diff.from} -> step ${diff.to}`];
  for (const { field, before, after } of diff.changed) lines.push(`  ${field}: ${clip(JSON.stringify(before) ?? 'undefined')} -> ${clip(JSON.stringify(after) ?? 'undefined')}`);
  for (const m of diff.addedMessages ?? []) lines.push(`  + message ${clip(JSON.stringify(m))}`);
  if (lines.length === 1) lines.push('  (no change)');
  return lines.join('\n');
}
