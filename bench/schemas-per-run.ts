/**
 * What a run's own schemas cost when each run builds them: the CPU and heap of loading the modules of a run's workflow
 * code that build schemas (input, the snapshot and what it loads, pattern messages, agents, the machine, the view's
 * workflow side) as a run's first workflow task loads them, 40 times after a warm-up, zod
 * already loaded and `once-per-worker` (where a checkout has it) kept, as the worker's shared context keeps it. Give
 * another checkout's root (with src/ under the project, for its node_modules) to compare with it:
 * `node --expose-gc -r tsx/cjs bench/schemas-per-run.ts [ROOT]` (default: this one).
 */
import path from 'node:path';

require('zod');
const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
const SRC = path.join(root, 'src') + path.sep;
const modules = ['common/input', 'machine/snapshot', 'common/pattern-messages', 'common/agents', 'machine/machine', 'workflows/view'].map((m) => require.resolve(SRC + m));
const loaded = () => Object.keys(require.cache).filter((k) => k.startsWith(SRC) && !k.includes('once-per-worker'));
const load = () => modules.forEach((m) => require(m));
const unload = () => loaded().forEach((k) => delete require.cache[k]);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

load();
unload();
const kept: unknown[] = [];
const N = 40;
gc();
const heap0 = process.memoryUsage().heapUsed;
const cpu0 = process.cpuUsage();
for (let i = 0; i < N; i++) {
  load();
  kept.push(loaded().map((k) => require.cache[k]!.exports));
  unload();
}
const cpu = process.cpuUsage(cpu0);
gc();
const heap = (process.memoryUsage().heapUsed - heap0) / N;
console.log(`${root}: ${((cpu.user + cpu.system) / 1000 / N).toFixed(1)} ms CPU and ${(heap / 1024).toFixed(0)} KiB of heap a run (${kept.length} loads kept)`);
