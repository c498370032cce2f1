/**
 * The provider API key lives only in the worker: it reaches the model endpoint on every request, and never any
 * history, whether a run completes, fails on an authentication error, or retries a server error. History payloads
 * are decoded before the search, since the key would sit there as bytes or base64, not as plain text.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { WORKFLOW_TYPE } from '../src/common/constants';
import { stateQuery } from '../src/common/messages';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { quietRuntime, workflowBundle } from './support/agent-harness';
import { createTestEnv, testServerAddress } from './support/temporal';

const exec = promisify(execFile);
const API_KEY = `sk-test-${randomBytes(24).toString('hex')}`;
/** The random part alone, so that a masked or cut key (`sk-...`, `Bearer ...`) is caught too. */
const KEY_BODY = API_KEY.slice('sk-test-'.length);
const HISTORIES = path.join(__dirname, 'histories');

/**
 * Every piece of text inside a value: strings, UTF-8 decoded bytes, and decoded base64 (committed histories and the
 * CLI's JSON carry payloads as base64). Keys count too. A plain `JSON.stringify` of a fetched history is not enough:
 * payload bytes come out as arrays of numbers, and a key inside a payload would go unseen.
 */
function readableText(value: unknown): string {
  const out: string[] = [];
  const visit = (v: unknown): void => {
    if (typeof v === 'string') {
      out.push(v);
      if (v.length >= 8 && v.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(v)) out.push(Buffer.from(v, 'base64').toString('utf8'));
    } else if (v instanceof Uint8Array) {
      out.push(Buffer.from(v).toString('utf8'));
    } else if (Array.isArray(v)) {
      v.forEach(visit);
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        out.push(k);
        visit(x);
      }
    }
  };
  visit(value);
  return out.join('\n');
}

interface Proxy {
  url: string;
  /** The `authorization` header of every request that went through. */
  authorizations: Array<string | undefined>;
  close(): Promise<void>;
}

/** Forwards to the scripted model and records the credentials the worker sent, so the test knows the key was in use. */
async function startRecordingProxy(target: string): Promise<Proxy> {
  const upstream = new URL(target);
  const authorizations: Proxy['authorizations'] = [];
  const server = http.createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    authorizations,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let env: TestWorkflowEnvironment;
let model: ScriptedModel;
let proxy: Proxy;
let worker: Worker;
let running: Promise<void>;
let cli: string;
const taskQueue = `secrets-${randomUUID()}`;

beforeAll(async () => {
  quietRuntime();
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'agent-secrets-'));
  writeFileSync(path.join(workspace, 'notes.txt'), 'nothing secret here\n');
  model = await startScriptedModel();
  proxy = await startRecordingProxy(model.url);
  env = await createTestEnv();
  worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    ...agentWorkerOptions({ openai: openAIClient({ baseURL: proxy.url, apiKey: API_KEY }), defaultModel: 'unset', workspace, degradedHeartbeatMs: 100 }),
  });
  running = worker.run();
  cli = await ensureTemporalCli({ quiet: true });
}, 120_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await env?.teardown();
  await proxy?.close();
  await model?.close();
});

const start = (input: Record<string, unknown>) =>
  env.client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId: `secrets-${randomUUID()}`, args: [input] });

/** Everything a person or a tool can read back about a run: its history (SDK and CLI forms), its description, its state. */
async function everythingAbout(handle: WorkflowHandle): Promise<Record<string, string>> {
  const { stdout } = await exec(cli, ['workflow', 'show', '--workflow-id', handle.workflowId, '--address', testServerAddress(), '--output', 'json'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return {
    history: readableText(await handle.fetchHistory()),
    cliHistory: readableText(JSON.parse(stdout)),
    description: readableText((await handle.describe()).raw),
    state: JSON.stringify(await handle.query(stateQuery, { includeMessages: true })),
  };
}

function expectNoKey(views: Record<string, string>, mustShow: string): void {
  const leaks = Object.fromEntries(Object.entries(views).map(([where, text]) => [where, text.includes(API_KEY) || text.includes(KEY_BODY)]));
  expect(leaks).toEqual(Object.fromEntries(Object.keys(views).map((where) => [where, false])));
  // The search is not vacuous: decoded payloads show what the run said.
  expect(views.history).toContain(mustShow);
  expect(views.cliHistory).toContain(mustShow);
}

test('a run that plans, calls a tool and answers leaves the key out of every history view', async () => {
  let call = 0;
  model.register('secret-tools', ({ request }) => {
    const system = request.messages[0]?.content;
    if (typeof system === 'string' && system.startsWith('You review')) return { text: '{"action":"complete","reason":"fine","confidence":90}' };
    call += 1;
    if (call === 1) return { text: 'Plan: list the files, then answer.' };
    if (call === 2) return { toolCalls: [{ name: 'readFile', arguments: { path: 'notes.txt' } }] };
    return { text: 'The notes say: nothing secret here', chunkSize: 5 };
  });
  const before = proxy.authorizations.length;
  const handle = await start({ prompt: 'What do the notes say? CANARY-PROMPT', model: 'secret-tools', plan: true, critique: 'model' });
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'The notes say: nothing secret here', toolCalls: 1 });

  // The key was live: every model request carried it.
  const sent = proxy.authorizations.slice(before);
  expect(sent.length).toBeGreaterThanOrEqual(4);
  expect(new Set(sent)).toEqual(new Set([`Bearer ${API_KEY}`]));

  const views = await everythingAbout(handle);
  expectNoKey(views, 'CANARY-PROMPT');
  expect(views.history).toContain('nothing secret here');
});

test('a run that fails on an authentication error, and one that retries a server error, leave the key out too', async () => {
  model.register('secret-401', [{ error: { status: 401, message: 'Incorrect API key provided: sk-test-****' } }]);
  model.register('secret-500', [{ error: { status: 500, message: 'upstream exploded' } }, { text: 'recovered' }]);
  const denied = await start({ prompt: 'CANARY-401', model: 'secret-401' });
  const retried = await start({ prompt: 'CANARY-500', model: 'secret-500' });

  const failure = await denied.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  expect((failure as WorkflowFailedError).cause?.message).toMatch(/authentication with the model provider failed/);
  await expect(retried.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'recovered' });

  expectNoKey(await everythingAbout(denied), 'CANARY-401');
  expectNoKey(await everythingAbout(retried), 'CANARY-500');
});

/** Found by this file and fixed: a provider that echoes the key it was given must not put it into history. */
test('a provider error that echoes the key does not carry it into history', async () => {
  model.register('secret-echo', [{ error: { status: 401, message: `Incorrect API key provided: ${API_KEY}` } }]);
  const handle = await start({ prompt: 'CANARY-ECHO', model: 'secret-echo' });
  await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  expectNoKey(await everythingAbout(handle), 'CANARY-ECHO');
});

test('the committed histories hold nothing that looks like a credential', () => {
  const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    const text = readableText(JSON.parse(readFileSync(path.join(HISTORIES, file), 'utf8')));
    // Decoded payloads are searched, not only the base64 on disk.
    expect({ file, decoded: text.includes('"prompt":') }).toEqual({ file, decoded: true });
    expect({ file, found: text.match(/sk-[A-Za-z0-9_-]{10,}|Bearer\s+\S+|api[_-]?key["':=\s]+[A-Za-z0-9_-]{10,}/gi) }).toEqual({ file, found: null });
  }
});
