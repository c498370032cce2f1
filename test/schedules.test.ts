/**
 * Agent schedules on the real dev server, worker and scripted model: created by cron and by interval, triggered, paused,
 * under an overlap policy, deleted; through the client, the CLI and the gateway, where a schedule and every run it
 * starts belong to the tenant that created it (another tenant gets 404 on every schedule route, and a role too weak 403).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { runCli } from '../src/cli/cli';
import { AgentClient, AgentScheduleExistsError, AgentScheduleNotFoundError, InvalidAgentInputError } from '../src/client';
import { gatewaySettings } from '../src/config';
import { buildGateway } from '../src/gateway/index';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

const TOKEN = 'schedules-service-token';
const ISSUER = 'https://id.example.test/';
const AUDIENCE = 'agent-gateway';

let h: AgentHarness;
let agents: AgentClient;
let app: FastifyInstance;
let jwks: http.Server;
let key: { privateKey: CryptoKey; jwk: JWK };
/** Every schedule a test creates, deleted at the end: a schedule left behind starts runs on for the rest of the suite. */
const created = new Set<string>();
let n = 0;
const newId = (what: string) => {
  const id = `sched-${what}-${process.pid}-${++n}`;
  created.add(id);
  return id;
};

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  key = { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' } };
  jwks = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.jwk] })));
  jwks.listen(0, '127.0.0.1');
  await new Promise((resolve) => jwks.once('listening', resolve));
  h = await startAgentHarness();
  h.model.register('sched-answer', () => ({ text: 'scheduled answer' }));
  // Waits for an approval, so that the run stays open.
  h.model.register('sched-wait', () => ({ toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] }));
  agents = new AgentClient(h.env.client, h.taskQueue);
  const settings = gatewaySettings({
    GATEWAY_TOKEN: TOKEN,
    GATEWAY_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
    GATEWAY_JWT_ISSUER: ISSUER,
    GATEWAY_JWT_AUDIENCE: AUDIENCE,
  });
  app = buildGateway({ agents, token: settings.token, jwt: settings.jwt, pollIntervalMs: 100, controlTimeoutMs: 3_000 });
  await app.ready();
}, 120_000);

afterAll(async () => {
  for (const id of created) await agents?.schedules.delete(id).catch(() => undefined);
  await app?.close();
  await h?.close();
  jwks?.close();
});

const jwt = (tenant: string, roles: string[], sub = `${tenant}-user`) =>
  new SignJWT({ tenant, roles }).setProtectedHeader({ alg: 'ES256', kid: 'ec-1' }).setSubject(sub).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime('10m').sign(key.privateKey);

const call = async (bearer: string, method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: String(res.headers['content-type']).includes('json') ? res.json() : res.body, headers: res.headers };
};

/** The CLI in this process, with the harness's client. */
async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { connect: async () => new AgentClient(h.env.client, h.taskQueue), out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

/** The runs the schedule has started (`recentRuns`), once there are at least `count`. */
const runsOf = (id: string, count: number, timeoutMs = 20_000) =>
  waitFor(async () => {
    const v = await agents.schedules.describe(id);
    return v.recentRuns.length >= count ? v.recentRuns : undefined;
  }, timeoutMs, `${count} run(s) of schedule ${id}`);

test('an interval schedule starts runs on its own; each is listed with its schedule, and deleting the schedule stops it', async () => {
  const id = newId('interval');
  const view = await agents.schedules.create({ scheduleId: id, intervalMs: 2_000, input: { prompt: 'every two seconds', model: 'sched-answer' } });
  expect(view).toMatchObject({ scheduleId: id, spec: { cron: null, intervalMs: 2_000, offsetMs: 0, jitterMs: 0 }, overlap: 'SKIP', paused: false, tenant: null, input: { prompt: 'every two seconds' } });
  expect(view.nextRunTimes.length).toBeGreaterThan(0);
  expect(Date.parse(view.nextRunTimes[0]!) % 2_000).toBe(0);
  const runs = await runsOf(id, 2);
  expect(runs[0]!.workflowId.startsWith(`${id}-`)).toBe(true);
  const result = await agents.handle(runs[0]!.workflowId).result();
  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'scheduled answer' });
  // The run list names the schedule of each of its runs, and filters by it.
  const listed = await waitFor(async () => {
    const rows = await agents.search({ schedule: id, limit: 50 });
    return rows.length >= 2 ? rows : undefined;
  }, 10_000, 'the schedule\'s runs in the list');
  expect(listed.every((r) => r.scheduleId === id && r.prompt === 'every two seconds')).toBe(true);
  expect((await agents.list({ limit: 200 })).find((r) => r.workflowId === runs[0]!.workflowId)?.scheduleId).toBe(id);
  await agents.schedules.delete(id);
  await expect(agents.schedules.describe(id)).rejects.toBeInstanceOf(AgentScheduleNotFoundError);
  await expect(agents.schedules.trigger(id)).rejects.toBeInstanceOf(AgentScheduleNotFoundError);
  const after = (await agents.search({ schedule: id, limit: 100 })).length;
  await new Promise((resolve) => setTimeout(resolve, 4_500));
  expect((await agents.search({ schedule: id, limit: 100 })).length).toBe(after);
}, 60_000);

test('a cron schedule reads its hours in its time zone; trigger starts a run now, paused or not; pause and unpause', async () => {
  const id = newId('cron');
  const view = await agents.schedules.create({ scheduleId: id, cron: '0 12 * * *', timezone: 'Europe/Paris', jitterMs: 30_000, paused: true, note: 'not yet', input: { prompt: 'at noon in Paris', model: 'sched-answer' } });
  expect(view).toMatchObject({ spec: { cron: '0 12 * * *', timezone: 'Europe/Paris', intervalMs: null, jitterMs: 30_000 }, paused: true, note: 'not yet', runsStarted: 0 });
  // Noon in Paris in December is 11:00 UTC; in summer 10:00.
  for (const at of view.nextRunTimes) expect([10, 11]).toContain(new Date(at).getUTCHours());
  await agents.schedules.trigger(id);
  const [run] = await runsOf(id, 1);
  expect(await agents.handle(run!.workflowId).result()).toMatchObject({ status: 'COMPLETED', answer: 'scheduled answer' });
  expect(await agents.schedules.unpause(id, 'go')).toMatchObject({ paused: false, note: 'go' });
  expect(await agents.schedules.pause(id)).toMatchObject({ paused: true });
  expect((await agents.schedules.describe(id)).runsStarted).toBe(1);
  const listed = await waitFor(async () => (await agents.schedules.list()).find((s) => s.scheduleId === id && s.paused), 10_000, 'the schedule in the list');
  expect(listed).toMatchObject({ prompt: 'at noon in Paris', spec: { cron: '0 12 * * *' } });
}, 60_000);

test('the overlap policy: SKIP starts nothing while a run is open, ALLOW_ALL starts one beside it', async () => {
  const id = newId('overlap');
  await agents.schedules.create({
    scheduleId: id,
    intervalMs: 24 * 3_600_000,
    overlap: 'SKIP',
    input: { prompt: 'read hello.txt', model: 'sched-wait', tools: ['readFile'], approval: { tools: ['readFile'] } },
  });
  await agents.schedules.trigger(id);
  const [first] = await runsOf(id, 1);
  await h.waitForState(h.env.client.workflow.getHandle(first!.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  // A second second: each run's id is the schedule's and the second it was due.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  await agents.schedules.trigger(id);
  const skipped = await waitFor(async () => {
    const v = await agents.schedules.describe(id);
    return v.skippedOverlap >= 1 ? v : undefined;
  }, 10_000, 'the trigger skipped for the open run');
  expect([skipped.runningRuns, skipped.recentRuns.length]).toEqual([[first!.workflowId], 1]);
  await agents.schedules.trigger(id, { overlap: 'ALLOW_ALL' });
  const both = await runsOf(id, 2);
  expect(new Set(both.map((r) => r.workflowId)).size).toBe(2);
  // Both open at once (the schedule tracks only the runs its own policy must wait for, not one started with ALLOW_ALL).
  for (const r of both) await h.waitForState(h.env.client.workflow.getHandle(r.workflowId), (s) => s.state === 'AWAITING_APPROVAL');
  for (const r of both) await agents.handle(r.workflowId).abort('test over');
}, 60_000);

test('bad options are refused before anything is created, naming the field', async () => {
  const input = { prompt: 'x', model: 'sched-answer' };
  const ids: string[] = [];
  const refused = async (options: { scheduleId: string } & Record<string, unknown>) => {
    ids.push(options.scheduleId);
    const err = await agents.schedules.create(options as never).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidAgentInputError);
    return (err as Error).message;
  };
  expect(await refused({ scheduleId: newId('none'), input })).toBe('Invalid schedule: cron: give exactly one of cron and intervalMs');
  expect(await refused({ scheduleId: newId('both'), cron: '@hourly', intervalMs: 60_000, input })).toContain('intervalMs: give exactly one of cron and intervalMs');
  expect(await refused({ scheduleId: newId('limits'), intervalMs: 60_000, input: { ...input, limits: { maxLoops: 0 } } })).toMatch(/^Invalid schedule: input\.limits\.maxLoops: /);
  expect(await refused({ scheduleId: newId('approval'), intervalMs: 60_000, input: { ...input, tools: ['readFile'], approval: { tools: ['writeFile'] } } })).toMatch(/^Invalid schedule: input: /);
  expect(await refused({ scheduleId: newId('offset'), intervalMs: 60_000, offsetMs: 60_000, input })).toContain('offsetMs: needs intervalMs, and must be below it');
  expect(await refused({ scheduleId: 'no/slash', intervalMs: 60_000, input })).toMatch(/^Invalid schedule: scheduleId: /);
  expect(await refused({ scheduleId: newId('cron'), cron: 'every day at noon', input })).toMatch(/^Invalid schedule: cron: /);
  expect(await refused({ scheduleId: newId('zone'), cron: '@daily', timezone: 'Mars/Olympus_Mons', input })).toMatch(/^Invalid schedule: cron or timezone: /);
  // None of them exists.
  for (const id of ids.filter((i) => !i.includes('/'))) await expect(agents.schedules.describe(id)).rejects.toBeInstanceOf(AgentScheduleNotFoundError);
  const id = newId('dup');
  await agents.schedules.create({ scheduleId: id, intervalMs: 3_600_000, paused: true, input });
  await expect(agents.schedules.create({ scheduleId: id, intervalMs: 3_600_000, input })).rejects.toBeInstanceOf(AgentScheduleExistsError);
});

test('the CLI: agent schedule create, list, describe, pause, unpause, trigger, delete; agent list shows the schedule', async () => {
  const id = newId('cli');
  const made = await cli('schedule', 'create', id, 'from the cli', '--every', '1h', '--offset', '15m', '--overlap', 'buffer-one', '--model', 'sched-answer', '--max-loops', '3', '--json');
  expect([made.code, made.err]).toEqual([0, '']);
  expect(JSON.parse(made.out)).toMatchObject({ scheduleId: id, spec: { intervalMs: 3_600_000, offsetMs: 900_000 }, overlap: 'BUFFER_ONE', input: { prompt: 'from the cli', model: 'sched-answer', limits: { maxLoops: 3 } } });
  // Refusals name the flags typed, and create nothing.
  expect(await cli('schedule', 'create', newId('cli-bad'), 'x', '--every', '1h', '--cron', '@daily')).toEqual({ code: 1, out: '', err: 'error: --every (intervalMs): give exactly one of cron and intervalMs\n' });
  expect((await cli('schedule', 'create', newId('cli-bad'), 'x', '--every', '1h', '--max-loops', '0')).err).toMatch(/^error: --max-loops \(limits\.maxLoops\): /);
  expect((await cli('schedule', 'create', newId('cli-bad'), 'x', '--every', 'soon')).err).toContain('--every must be a duration');
  expect((await cli('schedule', 'create', newId('cli-bad'), 'x', '--every', '1h', '--overlap', 'sometimes')).err).toContain('expected one of SKIP, BUFFER_ONE');

  const described = await cli('schedule', 'describe', id);
  expect(described.out).toMatch(new RegExp(`^schedule ${id}: every 1h \\+15m, overlap BUFFER_ONE`));
  expect(described.out).toContain('prompt: from the cli');
  expect((await cli('schedule', 'pause', id, '--note', 'maintenance')).out).toBe(`schedule ${id} paused (maintenance)\n`);
  expect(JSON.parse((await cli('schedule', 'unpause', id, '--json')).out)).toMatchObject({ paused: false });
  const listed = await waitFor(async () => {
    const out = (await cli('schedule', 'list')).out;
    return out.includes(id) ? out : undefined;
  }, 10_000, 'the schedule in agent schedule list');
  expect(listed).toMatch(/^SCHEDULE ID +SPEC +STATE +NEXT RUN +PROMPT\n/);
  expect(listed).toMatch(new RegExp(`${id} +every 1h \\+15m +active +\\S+ +from the cli`));

  expect((await cli('schedule', 'trigger', id)).code).toBe(0);
  const [run] = await runsOf(id, 1);
  await agents.handle(run!.workflowId).result();
  const runs = await waitFor(async () => {
    const out = (await cli('list', '--schedule', id)).out;
    return out.includes(run!.workflowId) ? out : undefined;
  }, 10_000, 'the run in agent list --schedule');
  expect(runs).toMatch(/^WORKFLOW ID +AGENT STATE +EXECUTION +SCHEDULE +STARTED\n/);
  expect(runs).toMatch(new RegExp(`${run!.workflowId.replace(/[.]/g, '\\.')} +COMPLETED +COMPLETED +${id} `));

  expect((await cli('schedule', 'delete', id, '--json')).out).toBe(`${JSON.stringify({ scheduleId: id, deleted: true })}\n`);
  expect(await cli('schedule', 'describe', id)).toEqual({ code: 1, out: '', err: `error: no agent schedule with id ${id}\n` });
}, 60_000);

test('through the gateway a schedule is its tenant\'s: its runs carry the tenant, another tenant gets 404 and no list entry, a viewer gets 403 on changes', async () => {
  const operatorA = await jwt('tenant-a', ['operator'], 'olivia');
  const viewerA = await jwt('tenant-a', ['viewer']);
  const intruder = await jwt('tenant-b', ['approver']);
  const id = newId('tenant');
  const createdRes = await call(operatorA, 'POST', '/v1/schedules', { scheduleId: id, intervalMs: 86_400_000, input: { prompt: 'the task of tenant a', model: 'sched-answer' } });
  expect([createdRes.status, createdRes.headers.location]).toEqual([201, `/v1/schedules/${id}`]);
  expect(createdRes.body).toMatchObject({ scheduleId: id, tenant: 'tenant-a', createdBy: 'olivia', input: { prompt: 'the task of tenant a', tenant: 'tenant-a' } });
  // A bad body is 400 naming the field, through the same schema.
  const bad = await call(operatorA, 'POST', '/v1/schedules', { scheduleId: newId('bad'), intervalMs: 60_000, input: { prompt: '' } });
  expect([bad.status, bad.body.error.code, bad.body.error.message]).toEqual([400, 'invalid_input', expect.stringMatching(/^Invalid schedule: input\.prompt: /)]);

  // Every schedule route of the document: 404 for another tenant, with the body of a schedule that does not exist.
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { 'x-required-role'?: string }>> };
  const routes = Object.entries(doc.paths)
    .filter(([path]) => path.includes('{scheduleId}'))
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ path, method: method.toUpperCase() as InjectOptions['method'] })));
  expect(routes.length).toBeGreaterThanOrEqual(5);
  for (const { path, method } of routes) {
    const res = await call(intruder, method, path.replace('{scheduleId}', id), method === 'POST' ? {} : undefined);
    const unknown = await call(intruder, method, path.replace('{scheduleId}', 'sched-never-was'), method === 'POST' ? {} : undefined);
    expect([method, path, res.status, res.body]).toEqual([method, path, 404, { error: { code: 'schedule_not_found', message: `no agent schedule with id ${id}` } }]);
    expect(unknown.body.error.code).toBe('schedule_not_found');
  }
  // Lists never cross tenants; the service sees all.
  const ids = async (token: string) => ((await call(token, 'GET', '/v1/schedules')).body.schedules as Array<{ scheduleId: string }>).map((s) => s.scheduleId);
  await waitFor(async () => ((await ids(viewerA)).includes(id) ? true : undefined), 10_000, 'the schedule in tenant a\'s list');
  expect(await ids(intruder)).not.toContain(id);
  expect(await ids(TOKEN)).toContain(id);

  // Roles: a viewer reads, and may change nothing; each refusal names the role needed.
  expect((await call(viewerA, 'GET', `/v1/schedules/${id}`)).status).toBe(200);
  for (const [method, url] of [['POST', '/v1/schedules'], ['POST', `/v1/schedules/${id}/pause`], ['POST', `/v1/schedules/${id}/unpause`], ['POST', `/v1/schedules/${id}/trigger`], ['DELETE', `/v1/schedules/${id}`]] as const) {
    const res = await call(viewerA, method, url, method === 'POST' ? {} : undefined);
    expect([method, url, res.status, res.body.error.requiredRole]).toEqual([method, url, 403, 'operator']);
  }
  expect((await call(operatorA, 'POST', `/v1/schedules/${id}/pause`, { note: 'hold' })).body).toMatchObject({ paused: true, note: 'hold' });
  expect((await call(operatorA, 'POST', `/v1/schedules/${id}/unpause`)).body).toMatchObject({ paused: false });

  // A triggered run is the tenant's: listed for a with its schedule, no run at all for b.
  expect((await call(operatorA, 'POST', `/v1/schedules/${id}/trigger`, {})).status).toBe(202);
  const [run] = await runsOf(id, 1);
  expect((await call(viewerA, 'GET', `/v1/runs/${run!.workflowId}/result`)).body).toMatchObject({ status: 'COMPLETED', answer: 'scheduled answer' });
  const listed = await waitFor(async () => {
    const runs = (await call(viewerA, 'GET', `/v1/runs?schedule=${id}`)).body.runs as Array<{ workflowId: string; scheduleId: string | null }>;
    return runs.length ? runs : undefined;
  }, 10_000, 'the scheduled run in tenant a\'s list');
  expect(listed).toEqual([expect.objectContaining({ workflowId: run!.workflowId, scheduleId: id, prompt: 'the task of tenant a' })]);
  expect(await agents.tenantOf(run!.workflowId)).toBe('tenant-a');
  expect((await call(intruder, 'GET', `/v1/runs/${run!.workflowId}`)).status).toBe(404);
  expect((await call(intruder, 'GET', `/v1/runs?schedule=${id}`)).body.runs).toEqual([]);

  expect((await call(intruder, 'DELETE', `/v1/schedules/${id}`)).status).toBe(404);
  expect((await call(operatorA, 'DELETE', `/v1/schedules/${id}`)).body).toEqual({ scheduleId: id, deleted: true });
  expect((await call(operatorA, 'GET', `/v1/schedules/${id}`)).status).toBe(404);
}, 60_000);
