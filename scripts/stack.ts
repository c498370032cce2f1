/**
 * `npm run stack -- up [--tls | --mtls] | down | status`: PostgreSQL, the Temporal Server on it, Redis, the scripted
 * model, two workers, the codec server, the gateway and the Temporal UI as plain processes, with data and logs in
 * .stack/ (docs/deployment.md, "Production stack"). STACK_PORT_OFFSET moves every port, STACK_TLS chooses TLS.
 */
import path from 'node:path';
import { readState, stackDown, stackOptionsFromEnv, stackStatus, stackUp } from './lib/stack/stack';
import { TEMPORAL_SERVER_VERSION } from './lib/stack/temporal-server-build';
import { clientTlsEnv, tlsFiles } from './lib/stack/tls';

const USAGE = 'usage: npm run stack -- up [--tls | --mtls] | down | status';

async function main(): Promise<void> {
  const command = process.argv[2];
  const opts = stackOptionsFromEnv(process.env, process.argv.slice(3));
  const rel = (p: string) => path.relative(process.cwd(), p) || '.';
  switch (command) {
    case 'up': {
      const t0 = Date.now();
      const { address, started, timings } = await stackUp(opts);
      const took = ((Date.now() - t0) / 1000).toFixed(1);
      console.log(started.length ? `stack up in ${took} s (started ${started.join(', ')})` : `stack already up (checked in ${took} s)`);
      const steps = Object.entries(timings).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join(', ');
      if (started.length) console.log(`  steps: ${steps}`);
      await printStatus(rel);
      console.log(`Temporal Server ${TEMPORAL_SERVER_VERSION} on ${address}: every command works as with the dev server (e.g. npm run agent -- run "...").`);
      printEndpoints(opts.dir, rel);
      return;
    }
    case 'down':
      await stackDown(opts.dir);
      console.log(`stack down; data kept in ${rel(opts.dir)} (npm run stack -- up resumes it)`);
      return;
    case 'status': {
      const up = await printStatus(rel);
      process.exitCode = up ? 0 : 3;
      return;
    }
    default:
      console.error(USAGE);
      process.exitCode = 2;
  }

  async function printStatus(relative: (p: string) => string): Promise<boolean> {
    const status = await stackStatus(opts.dir);
    const state = readState(opts.dir);
    if (status.components.length === 0) {
      console.log(`stack: nothing running (no processes recorded in ${relative(opts.dir)})`);
      return false;
    }
    for (const c of status.components) {
      const ports = c.ports.length ? ` ports ${c.ports.join(',')}` : '';
      console.log(`  ${c.name.padEnd(15)} ${c.running ? 'running' : 'STOPPED'} pid ${c.pid}${ports}  log ${c.log ? relative(c.log) : '-'}`);
    }
    const over = status.tls === 'off' ? '' : ` over ${status.tls === 'mtls' ? 'mutual TLS' : 'TLS'}`;
    console.log(`  frontend ${status.address}${over} ${status.frontendAnswers ? 'answers' : 'does NOT answer'} (namespace ${state?.namespace}, task queue ${state?.taskQueue})`);
    return status.frontendAnswers && status.components.every((c) => c.running);
  }
}

/** Where to point a browser, the CLI and clients: the UI, the gateway, the codec server and the TLS settings. */
function printEndpoints(dir: string, rel: (p: string) => string): void {
  const state = readState(dir);
  if (!state) return;
  const p = state.ports;
  const secrets = path.join(dir, 'secrets.json');
  console.log(`  Temporal UI   http://127.0.0.1:${p.ui}`);
  console.log(`  gateway       http://127.0.0.1:${p.gateway}/ui (GATEWAY_TOKEN: gatewayToken in ${rel(secrets)})`);
  console.log(`  codec server  http://127.0.0.1:${p.codecServer} (CODEC_SERVER_TOKEN: codecServerToken in ${rel(secrets)}; sign in at /login for the UI)`);
  console.log(`  redis         redis://127.0.0.1:${p.redis} (AGENT_STREAM_REDIS_URL)`);
  const tls = clientTlsEnv(state.tls ?? 'off', tlsFiles(dir));
  if (Object.keys(tls).length) console.log(`  clients need: ${Object.entries(tls).map(([k, v]) => `${k}=${k.endsWith('_PATH') ? rel(String(v)) : v}`).join(' ')}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
