/**
 * Where a worker's CPU goes, by phase: reads the V8 CPU profiles that `BENCH_CPU_PROF=<dir>` makes every bench child
 * write (one per thread: the worker's main thread and its workflow threads) and sums each sample's *self* time into
 * the phase of the code it was in, judged from the innermost frame that names a known place.
 *
 *   npx tsx bench/profile-breakdown.ts <dir> [--steps N] [--pid PID]
 *
 * `--steps` divides by the steps the profiled processes ran, to print milliseconds per step.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  parent?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Phases in order of precedence: a sample belongs to the first phase that any frame of its stack matches, so the
 * SDK's promise hook counts as itself even when workflow code created the promise, and an `openai` call as itself
 * even inside the activity that made it. Node's internals come last: they are where most work bottoms out.
 */
const PHASES: Array<[phase: string, test: (f: CallFrame) => boolean]> = [
  ['(garbage collector)', (f) => f.functionName === '(garbage collector)'],
  ['(idle)', (f) => f.functionName === '(idle)'],
  ['(program: native code, incl. the core bridge)', (f) => f.functionName === '(program)'],
  ['sandbox: promise hook and stack capture (SDK)', (f) => f.url.includes('promise_hooks') || (/worker\/lib\/workflow\/vm-shared\.js/.test(f.url) && /^(init|settled|Error\.prepareStackTrace|formatCallsiteName)$/.test(f.functionName))],
  ['logging and sinks', (f) => /worker\/lib\/(logger|sinks)|common\/lib\/logger|workflow\/lib\/(logs|sinks)/.test(f.url) || f.functionName === 'processSinkCalls'],
  ['interceptors and tracing', (f) => /interceptors-opentelemetry|@opentelemetry|src\/observability/.test(f.url)],
  ['heartbeats', (f) => /src\/activities\/heartbeat/.test(f.url)],
  ['openai client (request building, streaming parse)', (f) => /node_modules\/openai\//.test(f.url)],
  ['HTTP to the model (undici, sockets)', (f) => /undici/.test(f.url)],
  ['codecs (claim check, conversation store, blobs)', (f) => /src\/codec\//.test(f.url)],
  ['payload conversion (converters, JSON)', (f) => /common\/lib\/converter|payload-converter|data-converter/.test(f.url)],
  ['protobuf encode/decode', (f) => /@temporalio\/proto|protobufjs/.test(f.url)],
  ['workflow code (this product, in the sandbox)', (f) => /src\/(workflows|common)\//.test(f.url) || (/workflows\.js$/.test(f.url) && /^(agentRun|dispatch|transition|microstep|publicView|run|runTool|cancellable|handle|beforeWait|write|store|currentDetails)$/.test(f.functionName))],
  ['workflow SDK in the sandbox (activation, commands)', (f) => /workflows\.js$|@temporalio\/workflow\//.test(f.url)],
  ['worker: workflow thread, vm, activation messages', (f) => /worker\/lib\/workflow\//.test(f.url)],
  ['activities (model call, tools)', (f) => /worker\/lib\/activity|src\/activities\//.test(f.url)],
  ['worker: polling, core bridge glue, activation handling', (f) => /@temporalio\/(worker|core-bridge|client|common)\/|node_modules\/rxjs\//.test(f.url)],
  ['process startup (module loading)', (f) => /modules\/(cjs|esm)|tsx\/dist/.test(f.url)],
  ['node internals', (f) => /^node:|^internal\//.test(f.url)],
];

function phaseOf(profile: CpuProfile, byId: Map<number, ProfileNode>, id: number): string {
  const frames: CallFrame[] = [];
  for (let node = byId.get(id); node; node = node.parent === undefined ? undefined : byId.get(node.parent)) frames.push(node.callFrame);
  for (const [phase, test] of PHASES) if (frames.some(test)) return phase;
  return 'other';
}

function breakdown(profile: CpuProfile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) byId.get(c)!.parent = n.id;
  const memo = new Map<number, string>();
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    let phase = memo.get(id);
    if (phase === undefined) memo.set(id, (phase = phaseOf(profile, byId, id)));
    totals.set(phase, (totals.get(phase) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return totals;
}

function main(): void {
  const opts = new Command()
    .argument('<dir>')
    .option('--steps <n>', 'steps the profiled processes ran (prints ms per step)')
    .option('--pid <pid>', 'only the profiles of this process')
    .parse(process.argv);
  const dir = opts.args[0];
  const { steps, pid } = opts.opts<{ steps?: string; pid?: string }>();
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && (!pid || f.includes(`.${pid}.`)));
  const all = new Map<string, number>();
  for (const file of files) {
    const totals = breakdown(JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile);
    const busy = [...totals].filter(([k]) => k !== '(idle)').reduce((a, [, v]) => a + v, 0);
    console.log(`${file}: ${busy.toFixed(0)} ms busy`);
    for (const [k, v] of totals) all.set(k, (all.get(k) ?? 0) + v);
  }
  const per = steps ? Number(steps) : undefined;
  console.log(`\n| phase | ms | share |${per ? ' ms per step |' : ''}\n| --- | ---: | ---: |${per ? ' ---: |' : ''}`);
  const busy = [...all].filter(([k]) => k !== '(idle)').reduce((a, [, v]) => a + v, 0);
  for (const [k, v] of [...all].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1])) {
    console.log(`| ${k} | ${v.toFixed(0)} | ${((100 * v) / busy).toFixed(1)}% |${per ? ` ${(v / per).toFixed(2)} |` : ''}`);
  }
  console.log(`| **busy** | ${busy.toFixed(0)} | 100% |${per ? ` ${(busy / per).toFixed(2)} |` : ''}`);
}

main();
