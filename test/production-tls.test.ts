/**
 * The production tier's stack serves mutual TLS on its frontend (certificates made by `openssl` at setup, global
 * setup): a run completes through a worker that connects with the TEMPORAL_TLS_* settings, started and read by the
 * client library and by the `agent` CLI over mTLS; a client without a client certificate is refused, and says why.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { readState } from '../scripts/lib/stack/stack';
import { clientTlsEnv, tlsFiles } from '../scripts/lib/stack/tls';
import { PROJECT_ROOT } from '../scripts/lib/temporal-cli';
import { AgentClient } from '../src/client';
import { temporalSettings } from '../src/config';
import { startScriptedModel, textOf, type ScriptedModel } from '../src/scripted-model';
import { PRODUCTION_ENV, PRODUCTION_MODEL } from './global-setup-production';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through jest's production project (npm run test:production)`);
  return value;
};
let dir: string;
let model: ScriptedModel;

/** What a user of the stack sets: its address and task queue, the blob store, and the TEMPORAL_TLS_* settings. */
function userEnv(tls: 'mtls' | 'tls-without-client-certificate'): NodeJS.ProcessEnv {
  const state = readState(dir)!;
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: env(PRODUCTION_ENV.address),
    TEMPORAL_TASK_QUEUE: state.taskQueue,
    AGENT_BLOB_DIR: path.join(dir, 'agent', 'blobs'),
    ...clientTlsEnv(tls === 'mtls' ? 'mtls' : 'tls', tlsFiles(dir)),
  };
}

beforeAll(async () => {
  dir = env(PRODUCTION_ENV.dir);
  expect(readState(dir)?.tls).toBe('mtls');
  model = await startScriptedModel({ port: Number(env(PRODUCTION_ENV.modelPort)), host: '127.0.0.1' });
  model.register(PRODUCTION_MODEL, ({ request }) => {
    const prompt = (request.messages as any[]).filter((m) => m.role === 'user').map((m) => textOf(m.content)).join('\n');
    return { text: `answered over mTLS: ${/token (\w+)/.exec(prompt)?.[1] ?? '?'}` };
  });
});
afterAll(async () => {
  await model?.close();
});

test('with mTLS, the client library starts a run that a worker completes, and reads its result', async () => {
  const agents = await AgentClient.connect(temporalSettings(userEnv('mtls')));
  try {
    const token = randomUUID().slice(0, 8);
    const handle = await agents.start({ prompt: `Say the token ${token}.` });
    await expect(handle.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: `answered over mTLS: ${token}` });
  } finally {
    await agents.close();
  }
}, 120_000);

test('with mTLS, the agent CLI starts a run and waits for its result through the TEMPORAL_TLS_* settings', async () => {
  const token = randomUUID().slice(0, 8);
  const id = `tls-cli-${token}`;
  const cli = (...args: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/bin/agent.ts', ...args], { cwd: PROJECT_ROOT, env: userEnv('mtls'), timeout: 90_000 });
  await cli('start', `Say the token ${token}.`, '--id', id);
  const { stdout } = await cli('result', id, '--json');
  expect(JSON.parse(stdout)).toMatchObject({ status: 'COMPLETED', answer: `answered over mTLS: ${token}` });
}, 120_000);

test('a client or a worker without a client certificate is refused, and the error says a certificate is required and how to give one', async () => {
  const connect = AgentClient.connect(temporalSettings(userEnv('tls-without-client-certificate'))).then(async (agents) => {
    // The handshake may complete lazily: the first call is what the server refuses.
    try {
      await agents.start({ prompt: 'never runs' });
    } finally {
      await agents.close();
    }
  });
  await expect(connect).rejects.toThrow(/requires a client certificate \(mutual TLS\) and none is configured: set TEMPORAL_TLS_CLIENT_CERT_PATH/);

  // The worker likewise, before it does anything else.
  const worker = promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/bin/worker.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...userEnv('tls-without-client-certificate'), AGENT_WORKSPACE: path.join(dir, 'workspace'), AGENT_LEDGER: path.join(dir, 'tls-test-ledger.sqlite') },
    timeout: 60_000,
  });
  await expect(worker).rejects.toMatchObject({ stderr: expect.stringMatching(/requires a client certificate \(mutual TLS\) and none is configured/) });
}, 120_000);
