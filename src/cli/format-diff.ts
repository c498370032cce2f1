/** `agent diff`'s text: one line a change, long values cut around where they start to differ. */
import type { SnapshotDiff } from '../client';

const MAX = 160;

/** A value's JSON, cut to MAX characters from a little before `at` (where two values start to differ). */
function excerpt(value: unknown, at = 0): string {
  const text = JSON.stringify(value) ?? 'undefined';
  if (text.length <= MAX) return text;
  const start = Math.max(0, Math.min(at - 40, text.length - MAX + 1));
  const end = start + MAX - 1;
  return `${start > 0 ? '…' : ''}${text.slice(start, end)}${end < text.length ? '…' : ''}`;
}

/** Where two values' JSON texts first differ. */
function firstDifference(x: unknown, y: unknown): number {
  const [a, b] = [JSON.stringify(x) ?? '', JSON.stringify(y) ?? ''];
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** One line a change: `path: before -> after`, `+ path: value` (added), `- path: value` (removed). */
export function formatDiff(diff: SnapshotDiff): string {
  const lines = [diff.runs ? `${diff.runs.from} (step ${diff.from}) -> ${diff.runs.to} (step ${diff.to})` : `step ${diff.from} -> step ${diff.to}`];
  for (const c of diff.changes) {
    if (c.kind === 'added') lines.push(`  + ${c.path}: ${excerpt(c.after)}`);
    else if (c.kind === 'removed') lines.push(`  - ${c.path}: ${excerpt(c.before)}`);
    else {
      const at = firstDifference(c.before, c.after);
      lines.push(`  ${c.path}: ${excerpt(c.before, at)} -> ${excerpt(c.after, at)}`);
    }
  }
  if (lines.length === 1) lines.push('  (no change)');
  return lines.join('\n');
}
