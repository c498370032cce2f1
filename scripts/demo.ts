/**
 * The main job on embedded defaults: `npm start`.
 * Starts the local Temporal dev server if none answers, a worker, and one demo agent run; prints every state
 * transition live, the streamed text, the final answer and the run's link in the Temporal UI. The worker publishes to
 * an in-process hub (the embedded stream channel) and the demo prints the run from it, as the gateway's SSE would.
 * With no LLM_API_KEY / LLM_BASE_URL the run uses the project's scripted model (offline; not a real LLM).
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { humanWatchPrinter } from '../src/cli/cli';
import { AgentClient, failureReason, type AgentRunHandle, type WatchEvent } from '../src/client';
import { workerConfig } from '../src/config';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { liveStream, MemoryHub, START } from '../src/stream';
import { createAgentWorker } from '../src/worker';
import { ensureSearchAttributes, isServerUp, startDevServer, temporalUiUrl, type DevServerHandle } from './lib/dev-server';

const PROMPT = process.env.DEMO_PROMPT ?? 'Look around the workspace, read the most useful file, and tell me what it says.';
/** The scripted model's pace with --slow: 0.4 s a text chunk, 2 s before a tool call. */
const SLOW_PACE_MS = 400;

const WELCOME = `# Welcome to the durable agent worker
Every agent run is a Temporal workflow driven by an explicit state machine.
Kill the worker mid-run and start it again: the run resumes where it stopped.
`;

/** A workspace with something to read, so the demo has work to do. */
function seedWorkspace(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  if (readdirSync(dir).length > 0) return false;
  writeFileSync(path.join(dir, 'welcome.md'), WELCOME);
  return true;
}

async function main(): Promise<void> {
  // The demo prints the run itself; the SDK speaks up only for warnings.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // `npm start -- --slow`: the scripted model takes its time, so that pause, abort and approval can be tried by hand.
  const slow = process.argv.includes('--slow');
  const config = workerConfig(slow ? { SCRIPTED_MODEL_PACE_MS: String(SLOW_PACE_MS), ...process.env } : process.env);
  const { temporal } = config;
  let server: DevServerHandle | undefined;
  if (await isServerUp(temporal.address, temporal.namespace)) {
    await ensureSearchAttributes(temporal.address, temporal.namespace);
  } else {
    console.log(`demo: no Temporal server answers on ${temporal.address}; starting the local dev server (first start installs the temporal CLI)`);
    server = await startDevServer({ detached: true, logFile: '.temporal/server.log' });
    temporal.address = server.address;
    console.log(`demo: dev server ready on ${server.address}, UI ${server.uiUrl}; it keeps running after the demo (stop it with: kill ${server.pid})`);
  }

  const { workspace } = config;
  const seeded = seedWorkspace(workspace);
  const hub = new MemoryHub();
  const agent = await createAgentWorker({ config, stream: liveStream(hub) });
  const running = agent.run();
  console.log(
    agent.scriptedModelUrl
      ? `demo: model = scripted model "${agent.model}" at ${agent.scriptedModelUrl} (no LLM_API_KEY set; offline, not a real LLM)`
      : `demo: model = ${agent.model} at ${config.llm.baseURL ?? 'https://api.openai.com/v1'}`,
  );
  console.log(`demo: workspace ${workspace}${seeded ? ' (seeded with welcome.md)' : ''}`);

  const client = await AgentClient.connect(temporal);
  let exitCode = 0;
  try {
    const run = await client.start({ prompt: PROMPT });
    const ui = await temporalUiUrl(temporal.address, process.env, server);
    const link = ui
      ? `Temporal UI: ${ui}/namespaces/${temporal.namespace}/workflows/${encodeURIComponent(run.workflowId)}`
      : `Temporal UI: not found beside ${temporal.address} (set TEMPORAL_UI_URL to get the run's link)`;
    console.log(`demo: started run ${run.workflowId} on task queue ${temporal.taskQueue}`);
    if (slow) console.log(`demo: slow pace; from another terminal try: npm run agent -- pause ${run.workflowId} (then resume, or abort)`);
    console.log('');
    await followStream(hub, run, humanWatchPrinter((text) => process.stdout.write(text)));
    // watch printed the answer or the reason; the result only decides the exit code.
    await run.result().catch((err: unknown) => {
      exitCode = 1;
      console.log(`the run failed: ${failureReason(err)}`);
    });
    console.log(`\n${link}`);
  } finally {
    await client.close();
    agent.shutdown();
    await running;
    await hub.close();
  }
  process.exitCode = exitCode;
}

/** Prints the run from the hub as its events are published; should the hub lose some, from the run's state instead. */
async function followStream(hub: MemoryHub, run: AgentRunHandle, print: (e: WatchEvent) => void): Promise<void> {
  const sub = hub.subscribe(run.workflowId, START);
  for await (const item of sub) {
    if (item.kind !== 'event' || item.event.type === 'lost') {
      const why = item.kind === 'event' ? 'events were lost' : item.reason;
      console.log(`\ndemo: the stream stopped (${why}); following the run's state instead`);
      sub.close();
      await run.watch(print);
      return;
    }
    const e = item.event;
    print(e.type === 'transition' ? { type: 'transition', transition: e.transition } : e);
    if (e.type === 'end') break;
  }
  sub.close();
}

main().catch((err) => {
  console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
