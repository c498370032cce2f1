/**
 * What a run's own module instances cost: the CPU and the heap a run keeps of evaluating the workflow code's modules
 * (`workflows/index`, everything a run's first workflow task loads) and parsing its input, 40 times after a warm-up,
 * with zod loaded once and set up as the worker's shared context sets it (`common/zod-preload`), as the SDK's reusable
 * V8 context gives each run its own instances. Give another checkout's root (with src/ under the project, for its
 * node_modules) to compare with it, one root a process (zod's config is the process's):
 * `node --expose-gc -r tsx/cjs bench/schemas-per-run.ts [ROOT]` (default: this one).
 */
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
const SRC = path.join(root, 'src') + path.sep;
require('zod');
require(SRC + 'common/zod-preload');
const runCode = require.resolve(SRC + 'workflows/index');
const loaded = () => Object.keys(require.cache).filter((k) => k.startsWith(SRC) && !k.includes('zod-preload'));
const unload = () => loaded().forEach((k) => delete require.cache[k]);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const INPUT = { prompt: 'Write the note.', approval: { tools: ['writeFile'] } };

/** One run's first task, as far as its own modules go: evaluate them, parse the input as the workflow does. */
function firstTask(): unknown[] {
  require(runCode);
  const input = require(SRC + 'common/input') as { parseAgentRunInput: (v: unknown, s?: unknown) => { ok: boolean }; buildRunInputSchemas?: () => unknown };
  // A checkout whose workflow builds the input's schemas for its parse (common/input.ts) does so here too.
  const parsed = input.parseAgentRunInput(INPUT, input.buildRunInputSchemas?.());
  if (!parsed.ok) throw new Error(`the input did not parse in ${root}`);
  return loaded().map((k) => require.cache[k]!.exports);
}

for (let i = 0; i < 5; i++) (firstTask(), unload());
const kept: unknown[] = [];
const N = 40;
gc();
const heap0 = process.memoryUsage().heapUsed;
const cpu0 = process.cpuUsage();
for (let i = 0; i < N; i++) {
  kept.push(firstTask());
  unload();
}
const cpu = process.cpuUsage(cpu0);
gc();
const heap = (process.memoryUsage().heapUsed - heap0) / N;
console.log(`${root}: ${((cpu.user + cpu.system) / 1000 / N).toFixed(1)} ms CPU and ${(heap / 1024).toFixed(0)} KiB of heap kept a run (${kept.length} runs kept)`);
