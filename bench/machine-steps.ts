/**
 * The pure machine's CPU a step, outside Temporal and its sandbox: `transition` and the public view for a step of one
 * tool call (the model's answer, the tool's result, the rule critic), 3,000 steps after a warm-up. Give another
 * checkout's root to compare with it: `npx tsx bench/machine-steps.ts [ROOT]` (default: this one).
 */
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
const { transition } = require(`${root}/src/machine/machine`);
const { initialSnapshot } = require(`${root}/src/machine/snapshot`);
const { parseAgentRunInput } = require(`${root}/src/common/input`);
const { publicView } = require(`${root}/src/workflows/view`);
const parsed = parseAgentRunInput({ prompt: 'bench', limits: { maxLoops: 10000, maxToolCalls: 10000 } });
if (!parsed.ok) throw new Error(parsed.error);
const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };
function runSteps(n: number): number {
  let s = initialSnapshot(parsed.value, '2026-01-01T00:00:00.000Z');
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  const now = () => new Date((t += 7)).toISOString();
  const step = (e: unknown) => {
    const r = transition(s, e, now());
    if (!r.ok) throw new Error(r.error);
    s = r.snapshot;
    publicView(s, false);
  };
  step({ type: 'START' });
  for (let i = 0; i < n; i++) {
    const id = `c${i}`;
    step({ type: 'MODEL_RESPONDED', response: { text: '', toolCalls: [{ id, name: 'readFile', arguments: JSON.stringify({ path: `f${i % 7}.txt` }) }], usage, finishReason: 'tool_calls', model: 'm' } });
    step({ type: 'TOOLS_DONE', results: [{ toolCallId: id, name: 'readFile', ok: true, content: 'x'.repeat(1024) }] });
  }
  return n;
}
runSteps(200); // warm
const t0 = process.cpuUsage();
const N = 50;
const R = 60;
for (let r = 0; r < R; r++) runSteps(N);
const u = process.cpuUsage(t0);
console.log(`${root}: ${((u.user + u.system) / 1000 / (N * R)).toFixed(3)} ms CPU a step (machine + view)`);
