/**
 * The gateway keeps the contract its OpenAPI document states, on a real worker and dev server: schemathesis (installed
 * into .tools/ by the pretest) fuzzes every operation with every check, the stateful phase following the document's
 * links from a started run to its routes, and any finding fails the test. A client typed from the document compiles
 * against what the gateway answers.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../src/client';
import { buildGateway, openApiDocument } from '../src/gateway/index';
import { SCHEMATHESIS_DIR } from '../scripts/lib/prerequisites';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const TOKEN = 'contract-test-token';
let h: AgentHarness;
let app: FastifyInstance;
let baseUrl: string;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'gateway-contract-'));

beforeAll(async () => {
  h = await startAgentHarness();
  // Answers fast: a fuzzed run calls an unknown model and fails at once, so its streams and result end.
  app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token: TOKEN, pollIntervalMs: 100, controlTimeoutMs: 2_000, heartbeatMs: 1_000 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  // The schedules the fuzzing created would start runs on for the rest of the suite: each of this task queue's goes.
  for await (const s of h?.env.client.schedule.list() ?? []) {
    const handle = h.env.client.schedule.getHandle(s.scheduleId);
    const described = await handle.describe().catch(() => undefined);
    if (described?.action.taskQueue === h.taskQueue) await handle.delete().catch(() => undefined);
  }
  await app?.close();
  await h?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs schemathesis to its end; its output is kept for the failure message. */
function schemathesis(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', 'import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())', ...args], {
      env: { ...process.env, PYTHONPATH: SCHEMATHESIS_DIR, NO_COLOR: '1', SCHEMATHESIS_HOOKS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

test('schemathesis finds nothing: every operation, every check, the stateful phase following the links', async () => {
  const report = path.join(scratch, 'report.json');
  const config = path.join(scratch, 'schemathesis.toml');
  // The exceptions, each a documented answer to a valid request: a start body refused for a rule across its fields that
  // JSON Schema cannot state (`approval.tools` among `tools`), a fork from the step where the run ended (400), the
  // result of a run that failed (422 `run_failed`), a schedule refused for a rule across its fields (exactly one of `cron`
  // and `intervalMs`) or a cron the server cannot read (400), or whose id is taken (409). Every other check as it comes.
  const accept = (operationId: string, statuses: string[]) =>
    ['[[operations]]', `include-operation-id = "${operationId}"`, `checks.positive_data_acceptance.expected-statuses = ${JSON.stringify(['2xx', '401', '404', '409', ...statuses])}`].join('\n');
  writeFileSync(config, [accept('startRun', ['400']), accept('forkRun', ['400']), accept('getRunResult', ['422']), accept('createSchedule', ['400'])].join('\n\n'));
  const { code, output } = await schemathesis([
    '--config-file',
    config,
    'run',
    `${baseUrl}/openapi.json`,
    '--checks',
    'all',
    '--phases',
    'examples,coverage,fuzzing,stateful',
    '--max-examples',
    '10',
    '--seed',
    '50',
    '--workers',
    '1',
    '--request-timeout',
    '20',
    '--header',
    `Authorization: Bearer ${TOKEN}`,
    '--report',
    'ndjson',
    '--report-ndjson-path',
    report,
    '--no-color',
  ]);
  expect([code, code === 0 ? '' : output.slice(-20_000)]).toEqual([0, '']);
  // It tested every operation of the document, and the stateful phase ran scenarios along the links.
  const [selected, total] = output.match(/Selected: (\d+)\/(\d+)/)?.slice(1) ?? [];
  expect([selected, output.match(/Tested: (\d+)/)?.[1]]).toEqual([total, total]);
  expect(Number(total)).toBeGreaterThanOrEqual(Object.keys((openApiDocument() as { paths: object }).paths).length);
  expect(Number(output.match(/Scenarios:\s+(\d+)/)?.[1] ?? 0)).toBeGreaterThan(0);
  expect(readFileSync(report, 'utf8').length).toBeGreaterThan(0);
}, 600_000);

test('a client typed from the document (openapi-typescript) compiles against what the gateway answers', async () => {
  const doc = await (await fetch(`${baseUrl}/openapi.json`)).json();
  writeFileSync(path.join(scratch, 'openapi.json'), JSON.stringify(doc));
  const root = path.join(__dirname, '..');
  const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);
  const generated = spawnSync(bin('openapi-typescript'), [path.join(scratch, 'openapi.json'), '-o', path.join(scratch, 'api.d.ts')], { encoding: 'utf8' });
  expect([generated.status, generated.stderr]).toEqual([0, expect.anything()]);

  h.model.register('contract-answer', [{ text: 'typed' }]);
  const auth = { authorization: `Bearer ${TOKEN}` };
  const started = (await (await fetch(`${baseUrl}/v1/runs`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'hi', model: 'contract-answer' }) })).json()) as { workflowId: string };
  const result = await (await fetch(`${baseUrl}/v1/runs/${started.workflowId}/result`, { headers: auth })).json();
  const state = await (await fetch(`${baseUrl}/v1/runs/${started.workflowId}`, { headers: auth })).json();
  const steps = await (await fetch(`${baseUrl}/v1/runs/${started.workflowId}/steps`, { headers: auth })).json();
  writeFileSync(
    path.join(scratch, 'client.ts'),
    [
      "import type { components, operations } from './api';",
      'type Ok<O extends keyof operations, S extends keyof operations[O]["responses"]> = operations[O]["responses"][S] extends { content: { "application/json": infer B } } ? B : never;',
      // `satisfies`: each answer is checked against its type, a field the document does not have included.
      `export const started = ${JSON.stringify(started)} satisfies Ok<"startRun", 201>;`,
      `export const result = ${JSON.stringify(result)} satisfies Ok<"getRunResult", 200>;`,
      `export const state = ${JSON.stringify(state)} satisfies components["schemas"]["RunState"];`,
      `export const steps = ${JSON.stringify(steps)} satisfies Ok<"listRunSteps", 200>;`,
    ].join('\n'),
  );
  const tsc = spawnSync(bin('tsc'), ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', path.join(scratch, 'client.ts')], { encoding: 'utf8' });
  expect([tsc.status, tsc.stdout]).toEqual([0, '']);
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'typed' });
}, 120_000);
