import { chmodSync, mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_PORTS, stackDown, stackUp, type StackPorts } from '../scripts/lib/stack/stack';

/** What the production tier's test files read from the environment (set below, in the jest process). */
export const PRODUCTION_ENV = {
  dir: 'STACK_TEST_DIR',
  address: 'STACK_TEST_ADDRESS',
  taskQueue: 'STACK_TEST_TASK_QUEUE',
  modelPort: 'STACK_TEST_MODEL_PORT',
  effects: 'STACK_TEST_EFFECTS_FILE',
} as const;
export const PRODUCTION_MODEL = 'production';
export const PRODUCTION_TASK_QUEUE = 'production-tier';

/**
 * Distinct free ports for every listener of the stack, so it runs beside a dev server or a stack on 7233. Below 32768:
 * the server stores its membership ports in a PostgreSQL smallint, so an ephemeral port from the OS is refused.
 */
async function freePorts(): Promise<StackPorts> {
  const names = Object.keys(DEFAULT_PORTS);
  let candidate = 20_000 + Math.floor(Math.random() * 10_000);
  const entries: Array<[string, number]> = [];
  for (const name of names) {
    while (!(await isFree(candidate))) candidate++;
    entries.push([name, candidate++]);
  }
  return Object.fromEntries(entries) as unknown as StackPorts;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * The global setup of the `production` project (jest.config.js): the whole stack (PostgreSQL, the Temporal Server
 * built from source with mutual TLS on its frontend, Redis, two workers, the gateway, the codec server and the UI) in
 * a temp dir on free ports. The workers are the chaos worker, the real worker plus
 * `recordEffect`, a side-effecting tool that logs each real execution, and they call the scripted model that the test
 * file serves on STACK_TEST_MODEL_PORT (started later: workers call it only once a run starts).
 */
export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-stack-test-'));
  chmodSync(dir, 0o755); // PostgreSQL runs as its own user and must reach its data dir inside
  const ports = await freePorts();
  const effects = path.join(dir, 'effects.jsonl');
  const t0 = Date.now();
  // Jest runs no teardown when the setup fails: stop whatever came up.
  const up = stackUp({
    dir,
    ports,
    namespace: 'default',
    taskQueue: PRODUCTION_TASK_QUEUE,
    workers: 2,
    workerScript: 'chaos/worker.ts',
    workerEnv: {
      LLM_BASE_URL: `http://127.0.0.1:${ports.scriptedModel}/v1`,
      LLM_API_KEY: 'scripted',
      LLM_MODEL: PRODUCTION_MODEL,
      CHAOS_EFFECTS_FILE: effects,
    },
    // Every process and every test connects over mutual TLS, through the TEMPORAL_TLS_* settings (production-tls.test.ts).
    tls: 'mtls',
    log: (line) => console.log(line),
  });
  const { address, timings } = await up.catch(async (err: unknown) => {
    await stackDown(dir, () => undefined);
    throw err;
  });
  Object.assign(process.env, {
    [PRODUCTION_ENV.dir]: dir,
    [PRODUCTION_ENV.address]: address,
    [PRODUCTION_ENV.taskQueue]: PRODUCTION_TASK_QUEUE,
    [PRODUCTION_ENV.modelPort]: String(ports.scriptedModel),
    [PRODUCTION_ENV.effects]: effects,
  });
  const steps = Object.entries(timings).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join(', ');
  console.log(`\nstack up in ${dir} (frontend ${address}) in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${steps}`);
}
