/**
 * Where a worker's CPU goes, by phase: reads the V8 CPU profiles that `BENCH_CPU_PROF=<dir>` makes every bench child
 * write (one per thread: the worker's main thread and its workflow threads) and sums each sample's *self* time into
 * the phase of the code it was in, judged from the innermost frame that names a known place.
 *
 *   npx tsx bench/profile-breakdown.ts <dir> [--steps N] [--pid PID] [--steady] [--against <dir> --against-steps N]
 *
 * `--steps` divides by the steps the profiled processes ran, to print milliseconds per step. `--steady` leaves out
 * what a process did before its first workflow activation (module loading, bundling at boot), which the bench's CPU columns
 * do not count either. `--against` puts a second set of profiles (another system's, such as `temporal-floor`) beside
 * the first, with the difference per step.
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

/** Each sample's phase and time (µs, on the process's monotonic clock, shared by its threads). */
function samplesOf(profile: CpuProfile): Array<{ phase: string; at: number; ms: number; activation: boolean }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) byId.get(c)!.parent = n.id;
  const memo = new Map<number, string>();
  const activations = new Set(profile.nodes.filter((n) => n.callFrame.functionName === 'activate').map((n) => n.id));
  const inActivation = (id: number): boolean => {
    for (let node = byId.get(id); node; node = node.parent === undefined ? undefined : byId.get(node.parent)) if (activations.has(node.id)) return true;
    return false;
  };
  let at = profile.startTime;
  return profile.samples.map((id, i) => {
    let phase = memo.get(id);
    if (phase === undefined) memo.set(id, (phase = phaseOf(profile, byId, id)));
    at += profile.timeDeltas[i] ?? 0;
    return { phase, at, ms: (profile.timeDeltas[i] ?? 0) / 1000, activation: activations.size > 0 && inActivation(id) };
  });
}

/** Totals by phase of every profile in `dir` (of process `pid` if given); `steady`: from each process's first workflow activation on. */
function breakdownOf(dir: string, pid: string | undefined, steady: boolean): Map<string, number> {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && (!pid || f.includes(`.${pid}.`)));
  const byProcess = new Map<string, Array<ReturnType<typeof samplesOf>>>();
  for (const file of files) {
    const proc = file.split('.')[3];
    const samples = samplesOf(JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile);
    byProcess.set(proc, [...(byProcess.get(proc) ?? []), samples]);
    console.log(`${dir}/${file}: ${samples.filter((x) => x.phase !== '(idle)').reduce((a, x) => a + x.ms, 0).toFixed(0)} ms busy`);
  }
  const all = new Map<string, number>();
  for (const threads of byProcess.values()) {
    // A process with no workflow activation (a driver) counts whole.
    const from = steady ? threads.flat().reduce((min, x) => (x.activation && x.at < min ? x.at : min), Infinity) : -Infinity;
    const since = from === Infinity ? -Infinity : from;
    for (const x of threads.flat()) if (x.at >= since && x.phase !== '(idle)') all.set(x.phase, (all.get(x.phase) ?? 0) + x.ms);
  }
  return all;
}

function main(): void {
  const opts = new Command()
    .argument('<dir>')
    .option('--steps <n>', 'steps the profiled processes ran (prints ms per step)')
    .option('--pid <pid>', 'only the profiles of this process')
    .option('--steady', 'only what each process did from its first workflow activation on', false)
    .option('--against <dir>', 'profiles of another system, shown beside these')
    .option('--against-steps <n>', 'steps the other system ran (default: --steps)')
    .parse(process.argv);
  const { steps, pid, steady, against, againstSteps } = opts.opts<{ steps?: string; pid?: string; steady: boolean; against?: string; againstSteps?: string }>();
  const ours = breakdownOf(opts.args[0], pid, steady);
  const other = against ? breakdownOf(against, undefined, steady) : undefined;
  const per = steps ? Number(steps) : 1;
  const otherPer = againstSteps ? Number(againstSteps) : per;
  const unit = steps ? 'ms per step' : 'ms';
  const busy = (m: Map<string, number>) => [...m.values()].reduce((a, v) => a + v, 0);
  const phases = [...new Set([...ours.keys(), ...(other?.keys() ?? [])])].sort((a, b) => (ours.get(b) ?? 0) - (ours.get(a) ?? 0));
  const row = (name: string, a: number, b: number | undefined) =>
    `| ${name} | ${(a / per).toFixed(2)} | ${((100 * a) / busy(ours)).toFixed(1)}% |${b === undefined ? '' : ` ${(b / otherPer).toFixed(2)} | ${(a / per - b / otherPer >= 0 ? '+' : '')}${(a / per - b / otherPer).toFixed(2)} |`}`;
  console.log(`\n| phase | ${unit} | share |${other ? ` ${unit}, against | difference |` : ''}\n| --- | ---: | ---: |${other ? ' ---: | ---: |' : ''}`);
  for (const k of phases) console.log(row(k, ours.get(k) ?? 0, other && (other.get(k) ?? 0)));
  console.log(row('**busy**', busy(ours), other && busy(other)));
}

main();
