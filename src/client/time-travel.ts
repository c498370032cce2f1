/** Time travel over a run's steps: the pure part of `AgentRunHandle.steps()` and `diff(from, to)` (src/cli/format-diff.ts prints a diff). */
import type { RunStateView } from '../common/messages';
import type { TransitionRecord } from '../common/view';

export interface StepRecord extends TransitionRecord {
  step: number;
}

/** The run's steps as far as its state still lists them (a continued run keeps the recent end). */
export function stepsOf(view: RunStateView): StepRecord[] {
  const first = view.step - view.transitions.length + 1;
  return view.transitions.map((t, i) => ({ step: first + i, ...t }));
}

/** One difference between two snapshots, at the deepest path where they differ. */
export interface DiffEntry {
  /** A field, then `.key` and `[index]` down to what differs, e.g. `messages[3]` or `usage.totalTokens`. */
  path: string;
  /** `added`: only `to` has it; `removed`: only `from`; `changed`: both, with different values. */
  kind: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

export interface SnapshotDiff {
  from: number;
  to: number;
  /** Every difference, down to the entry or value that differs; `transitions` and `stateSince` are left out (`agent history` lists them). */
  changes: DiffEntry[];
  /** Top-level fields whose value differs, with both values whole (`messages` left out). */
  changed: Array<{ field: string; before: unknown; after: unknown }>;
  /** Messages present at `to` and not at `from`, when both carry the conversation and it only grew. */
  addedMessages?: unknown[];
  /** A diff of two runs (`AgentClient.diffRuns`): their workflow ids; `from` and `to` are then their last steps. */
  runs?: { from: string; to: string };
}

/** Fields that describe how the snapshot is kept rather than what the run did. */
const SKIPPED = new Set(['transitions', 'stateSince']);

export function diffSnapshots(a: RunStateView, b: RunStateView): SnapshotDiff {
  const [before, after] = [a as unknown as Record<string, unknown>, b as unknown as Record<string, unknown>];
  const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((f) => !SKIPPED.has(f)).sort();
  const changes: DiffEntry[] = [];
  for (const field of fields) walk(field, before[field], after[field], changes);
  const changed = fields
    .filter((field) => field !== 'messages')
    .map((field) => ({ field, before: before[field], after: after[field] }))
    .filter(({ before, after }) => !same(before, after));
  const diff: SnapshotDiff = { from: a.step, to: b.step, changes, changed };
  if (a.messages && b.messages) {
    const grew = a.messages.every((m, i) => same(m, b.messages![i]));
    if (grew) diff.addedMessages = b.messages.slice(a.messages.length);
  }
  return diff;
}

const same = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const key = (path: string, k: string) => (/^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`);

/** Arrays entry by entry and objects key by key, so that an entry added to a long array shows as that entry. */
function walk(path: string, x: unknown, y: unknown, out: DiffEntry[]): void {
  if (same(x, y)) return;
  if (x === undefined) out.push({ path, kind: 'added', after: y });
  else if (y === undefined) out.push({ path, kind: 'removed', before: x });
  else if (Array.isArray(x) && Array.isArray(y)) for (let i = 0; i < Math.max(x.length, y.length); i++) walk(`${path}[${i}]`, x[i], y[i], out);
  else if (isRecord(x) && isRecord(y)) for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) walk(key(path, k), x[k], y[k], out);
  else out.push({ path, kind: 'changed', before: x, after: y });
}
