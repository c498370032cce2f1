/**
 * Signed identities, tenants and roles on the real gateway, dev server and worker: JWTs signed with keys made here and
 * checked against a JWKS this test serves over HTTP. Every run route of the OpenAPI document is 404 to another tenant,
 * with the body of an unknown run; every role boundary is 403; refused tokens are 401 with the reason; lists never
 * cross tenants; children and forks stay in their tenant; the service token sees all.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { defineAgent } from '../src/activities';
import { AgentClient } from '../src/client';
import { gatewaySettings } from '../src/config';
import { buildGateway } from '../src/gateway/index';
import { ROLES, type Role } from '../src/gateway/identity';
import { requiredRole } from '../src/gateway/openapi';
import { sleep, startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteMemoryStore } from '../src/memory/sqlite';

const TOKEN = 'tenancy-service-token';
const ISSUER = 'https://id.example.test/';
const AUDIENCE = 'agent-gateway';
/** Shorter than the default 30 s, so that the rotation test need not wait that long. */
const JWKS_COOLDOWN_MS = 1_000;

let h: AgentHarness;
let app: FastifyInstance;
/** The memory store the worker's tools and the gateway share. */
const memory = new SqliteMemoryStore(path.join(mkdtempSync(path.join(os.tmpdir(), 'tenancy-memory-')), 'memory.sqlite'));
let jwks: http.Server;
let jwksRequests = 0;
const keys: Record<'rsa' | 'ec' | 'rogue' | 'rotated', { privateKey: CryptoKey; jwk: JWK }> = {} as never;
/** The key set the issuer publishes; a test adds a key to it to see the gateway fetch it again. */
const published: JWK[] = [];

async function makeKey(alg: 'RS256' | 'ES256', kid: string) {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

interface Claims {
  sub?: string;
  tenant?: string;
  roles?: string[] | string;
  iss?: string;
  aud?: string;
  exp?: number | string;
  nbf?: number | string;
}

/** A JWT as the issuer would sign it, with `claims` over the defaults (tenant a, approver, valid 10 minutes). */
async function jwt(claims: Claims = {}, key: keyof typeof keys = 'ec', kid?: string): Promise<string> {
  const { sub = 'alice', tenant = 'tenant-a', roles = ['approver'], iss = ISSUER, aud = AUDIENCE, exp = '10m', nbf } = claims;
  const payload: Record<string, unknown> = { roles };
  if (tenant !== '') payload.tenant = tenant;
  const signer = new SignJWT(payload)
    .setProtectedHeader({ alg: key === 'rsa' ? 'RS256' : 'ES256', kid: kid ?? keys[key].jwk.kid! })
    .setSubject(sub)
    .setIssuer(iss)
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime(exp);
  if (nbf !== undefined) signer.setNotBefore(nbf);
  return signer.sign(keys[key].privateKey);
}

beforeAll(async () => {
  keys.rsa = await makeKey('RS256', 'rsa-1');
  keys.ec = await makeKey('ES256', 'ec-1');
  // Not published: a token it signs under a published kid is a forgery.
  keys.rogue = await makeKey('ES256', 'ec-1');
  published.push(keys.rsa.jwk, keys.ec.jwk);
  jwks = http.createServer((req, res) => {
    jwksRequests++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
  });
  jwks.listen(0, '127.0.0.1');
  await new Promise((resolve) => jwks.once('listening', resolve));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;

  const helper = defineAgent({ name: 'helper', description: 'Looks one thing up.', instructions: 'You look one thing up.', model: 'tenancy-helper', tools: [] });
  h = await startAgentHarness(undefined, { agents: [helper], memory });
  h.model.register('tenancy-helper', () => ({ text: 'looked it up' }));
  h.model.register('tenancy-answer', () => ({ text: 'the answer' }));
  // The settings as the gateway process reads them.
  const settings = gatewaySettings({ GATEWAY_TOKEN: TOKEN, GATEWAY_JWKS_URL: jwksUrl, GATEWAY_JWT_ISSUER: ISSUER, GATEWAY_JWT_AUDIENCE: AUDIENCE });
  app = buildGateway({
    agents: new AgentClient(h.env.client, h.taskQueue, undefined, memory),
    token: settings.token,
    jwt: { ...settings.jwt!, jwksCooldownMs: JWKS_COOLDOWN_MS },
    pollIntervalMs: 100,
    controlTimeoutMs: 3_000,
  });
  await app.ready();
}, 120_000);

afterAll(async () => {
  await app?.close();
  await h?.close();
  await memory.close();
  jwks?.close();
});

const call = async (bearer: string, method: InjectOptions['method'], url: string, payload?: object) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: String(res.headers['content-type']).includes('json') ? res.json() : res.body, headers: res.headers };
};

const started = new Map<string, Promise<string>>();
/** A completed run of `tenant` (started through the gateway by its approver), once per tenant. */
function runOf(tenant: string): Promise<string> {
  if (!started.has(tenant)) {
    started.set(
      tenant,
      (async () => {
        const token = await jwt({ tenant, sub: `${tenant}-starter` });
        const res = await call(token, 'POST', '/v1/runs', { prompt: `the task of ${tenant}`, model: 'tenancy-answer' });
        expect(res.status).toBe(201);
        expect((await call(token, 'GET', `/v1/runs/${res.body.workflowId}/result`)).body).toMatchObject({ status: 'COMPLETED' });
        return res.body.workflowId as string;
      })(),
    );
  }
  return started.get(tenant)!;
}

type Operation = { 'x-required-role'?: Role; requestBody?: unknown };
const documentOps = async () => {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, Operation>> };
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase() as 'GET' | 'POST' | 'PUT' | 'DELETE', op })));
};

/** A request each operation takes (a body it accepts, the query it needs), on run `id`. */
function request(path: string, id: string): { url: string; payload?: object } {
  const url = path.replace('{id}', encodeURIComponent(id)).replace('{step}', '1').replace('{namespace}', 'probe').replace('{key}', 'k');
  const payloads: Record<string, object> = {
    '/v1/runs': { prompt: 'x', model: 'tenancy-answer' },
    '/v1/runs/{id}/approvals': { toolCallId: 'c0', approved: true },
    '/v1/runs/{id}/messages': { text: 'hello' },
    '/v1/runs/{id}/fork': { fromStep: 1 },
    '/v1/runs/{id}/abort': { reason: 'probe' },
    '/v1/memory/{namespace}/search': { query: 'probe' },
    '/v1/memory/{namespace}/keys/{key}': { text: 'probe' },
  };
  return { url: path === '/v1/runs/{id}/diff' ? `${url}?from=1&to=2` : url, ...(payloads[path] ? { payload: payloads[path] } : {}) };
}

test('another tenant gets 404 on every run route of the OpenAPI document, the body of a run that does not exist', async () => {
  const idA = await runOf('tenant-a');
  const intruder = await jwt({ tenant: 'tenant-b', sub: 'mallory', roles: ['approver'] });
  const runRoutes = (await documentOps()).filter(({ path }) => path.includes('{id}'));
  expect(runRoutes.length).toBeGreaterThanOrEqual(16);
  for (const { path, method } of runRoutes) {
    const { url, payload } = request(path, idA);
    const res = await call(intruder, method, url, payload);
    const unknown = await call(intruder, method, request(path, 'agent-never-was').url, payload);
    expect([method, path, res.status]).toEqual([method, path, 404]);
    expect([method, path, res.body]).toEqual([method, path, JSON.parse(JSON.stringify(unknown.body).replaceAll('agent-never-was', idA))]);
    expect(res.body).toEqual({ error: { code: 'run_not_found', message: `no agent run with id ${idA}` } });
  }
  // A run of its own compared against the other tenant's (`/diff?against=`) reveals nothing either.
  const idB = await runOf('tenant-b');
  const against = await call(intruder, 'GET', `/v1/runs/${idB}/diff?against=${idA}`);
  expect([against.status, against.body]).toEqual([404, { error: { code: 'run_not_found', message: `no agent run with id ${idA}` } }]);
  // The run's own tenant reads it; nothing of the probes reached it (no abort, no fork, no message).
  const owner = await jwt({ tenant: 'tenant-a', roles: ['viewer'] });
  const state = await call(owner, 'GET', `/v1/runs/${idA}`);
  expect([state.status, state.body.state]).toEqual([200, 'COMPLETED']);
  expect((await call(TOKEN, 'GET', `/v1/runs?forkOf=${idA}`)).body.runs).toEqual([]);
});

test('each role boundary is 403 naming the role the operation needs, from the document\'s x-required-role', async () => {
  const idA = await runOf('tenant-a');
  const ops = (await documentOps()).filter(({ path }) => path.startsWith('/v1/'));
  const needs = Object.fromEntries(ops.map(({ path, method, op }) => [`${method} ${path}`, op['x-required-role']]));
  expect(needs).toMatchObject({
    'GET /v1/runs': 'viewer',
    'GET /v1/runs/{id}': 'viewer',
    'GET /v1/runs/{id}/events': 'viewer',
    'POST /v1/runs/{id}/stream-token': 'viewer',
    'POST /v1/runs': 'operator',
    'POST /v1/runs/{id}/messages': 'operator',
    'POST /v1/runs/{id}/pause': 'operator',
    'POST /v1/runs/{id}/resume': 'operator',
    'POST /v1/runs/{id}/abort': 'operator',
    'POST /v1/runs/{id}/fork': 'operator',
    'POST /v1/runs/{id}/approvals': 'approver',
    'GET /v1/memory/{namespace}': 'viewer',
    'POST /v1/memory/{namespace}/search': 'viewer',
    'GET /v1/memory/{namespace}/keys/{key}': 'viewer',
    'PUT /v1/memory/{namespace}/keys/{key}': 'operator',
    'DELETE /v1/memory/{namespace}/keys/{key}': 'operator',
  });
  for (const { path, method, op } of ops) {
    const needed = op['x-required-role'];
    expect([method, path, needed]).toEqual([method, path, expect.stringMatching(/^(viewer|operator|approver)$/)]);
    // Every role weaker than the one needed, and none at all.
    for (const roles of [[], ...ROLES.slice(0, ROLES.indexOf(needed!)).map((r) => [r])]) {
      const { url, payload } = request(path, idA);
      const res = await call(await jwt({ tenant: 'tenant-a', roles }), method, url, payload);
      expect([method, path, roles, res.status, res.body.error?.requiredRole]).toEqual([method, path, roles, 403, needed]);
      expect(res.body.error.message).toContain(`needs the ${needed} role`);
    }
  }
  // At the boundary, allowed: a viewer reads, an operator starts, an approver gets past the role check (to the run's own 409).
  expect((await call(await jwt({ roles: ['viewer'] }), 'GET', `/v1/runs/${idA}/steps`)).status).toBe(200);
  expect((await call(await jwt({ roles: 'viewer operator' }), 'POST', '/v1/runs', { prompt: 'x', model: 'tenancy-answer' })).status).toBe(201);
  const approve = await call(await jwt({ roles: ['approver'] }), 'POST', `/v1/runs/${idA}/approvals`, { toolCallId: 'c0', approved: true });
  expect([approve.status, approve.body.error.code]).toEqual([409, 'run_ended']);
  // The workers' internal routes are in no operation: the service's only.
  expect(requiredRole('POST', '/internal/v1/streams/:id')).toBe('service');
});

test('refused tokens are 401 with the reason in WWW-Authenticate, never the token', async () => {
  const now = Math.floor(Date.now() / 1000);
  const cases: Array<[string, string, RegExp]> = [
    ['forged (another key under the published kid)', await jwt({}, 'rogue'), /signature does not verify/],
    ['expired', await jwt({ exp: now - 60 }), /the token expired at /],
    ['not yet valid', await jwt({ nbf: now + 3600 }), /not valid yet before /],
    ['another issuer', await jwt({ iss: 'https://evil.example.test/' }), new RegExp(`not issued by ${ISSUER.replace(/[.]/g, '\\.')}`)],
    ['another audience', await jwt({ aud: 'another-service' }), /not meant for agent-gateway \(aud\)/],
    ['no tenant', await jwt({ tenant: '' }), /no tenant claim/],
    ['malformed', 'not-a-jwt', /malformed/],
  ];
  for (const [what, token, reason] of cases) {
    const res = await call(token, 'GET', '/v1/runs');
    expect([what, res.status, res.body.error.code]).toEqual([what, 401, 'unauthorized']);
    const header = res.headers['www-authenticate'] as string;
    expect([what, header]).toEqual([what, expect.stringMatching(/^Bearer error="invalid_token", error_description="[^"\\]+"$/)]);
    expect([what, header]).toEqual([what, expect.stringMatching(reason)]);
    expect(header).not.toContain(token);
    expect(JSON.stringify(res.body)).not.toContain(token);
  }
  // RS256 is taken as ES256 is.
  expect((await call(await jwt({ roles: ['viewer'] }, 'rsa'), 'GET', '/v1/runs')).status).toBe(200);
  // No header at all: the plain challenge.
  const bare = await app.inject({ method: 'GET', url: '/v1/runs' });
  expect([bare.statusCode, bare.headers['www-authenticate']]).toEqual([401, 'Bearer']);
});

test('a key the issuer rotates in is fetched again when a token names its kid', async () => {
  keys.rotated = await makeKey('ES256', 'ec-2');
  const token = await jwt({ roles: ['viewer'] }, 'rotated');
  // Not yet published: no key matches (and the gateway may fetch the set again only once its cooldown has passed).
  const early = await call(token, 'GET', '/v1/runs');
  expect([early.status, early.headers['www-authenticate']]).toEqual([401, expect.stringContaining('no key of the issuer')]);
  published.push(keys.rotated.jwk);
  const before = jwksRequests;
  await sleep(JWKS_COOLDOWN_MS + 100);
  const res = await call(token, 'GET', '/v1/runs');
  expect(res.status).toBe(200);
  expect(jwksRequests).toBe(before + 1);
  // Cached: the next token of that key fetches nothing.
  expect((await call(await jwt({ roles: ['viewer'] }, 'rotated'), 'GET', '/v1/runs')).status).toBe(200);
  expect(jwksRequests).toBe(before + 1);
});

test('lists and searches of one tenant never show another\'s runs; the service token sees all', async () => {
  const [idA, idB] = [await runOf('tenant-a'), await runOf('tenant-b')];
  const viewerA = await jwt({ tenant: 'tenant-a', roles: ['viewer'] });
  const viewerB = await jwt({ tenant: 'tenant-b', roles: ['viewer'] });
  const ids = async (token: string, query = '') => ((await call(token, 'GET', `/v1/runs?limit=1000${query}`)).body.runs as Array<{ workflowId: string }>).map((r) => r.workflowId);
  expect(await ids(viewerA)).toContain(idA);
  expect(await ids(viewerA)).not.toContain(idB);
  expect(await ids(viewerB)).toContain(idB);
  expect(await ids(viewerB)).not.toContain(idA);
  // Searching for the other's prompt, id or state finds nothing.
  expect(await ids(viewerB, '&q=the%20task%20of%20tenant-a')).toEqual([]);
  expect(await ids(viewerB, `&q=${idA}`)).toEqual([]);
  expect(await ids(viewerB, '&state=COMPLETED')).not.toContain(idA);
  const all = await ids(TOKEN);
  expect(all).toEqual(expect.arrayContaining([idA, idB]));
  // The service reads every tenant's run.
  expect((await call(TOKEN, 'GET', `/v1/runs/${idB}`)).status).toBe(200);
});

test('children and forks stay in their tenant; an id of another tenant cannot be taken', async () => {
  const operatorA = await jwt({ tenant: 'tenant-a', sub: 'olivia', roles: ['operator'] });
  const viewerB = await jwt({ tenant: 'tenant-b', roles: ['viewer'] });
  h.model.register('tenancy-boss', ({ callIndex }) => (callIndex === 0 ? { toolCalls: [{ id: 'c0', name: 'helper', arguments: { prompt: 'look' } }] } : { text: 'done' }));
  const parent = await call(operatorA, 'POST', '/v1/runs', { prompt: 'delegate', model: 'tenancy-boss', tools: ['helper'] });
  expect(parent.status).toBe(201);
  expect((await call(operatorA, 'GET', `/v1/runs/${parent.body.workflowId}/result`)).body).toMatchObject({ status: 'COMPLETED', answer: 'done' });
  const children = (await call(operatorA, 'GET', `/v1/runs/${parent.body.workflowId}`)).body.children as Array<{ workflowId: string }>;
  expect(children).toHaveLength(1);
  const child = children[0]!.workflowId;
  // The child is tenant a's: listed for a, no run at all for b.
  expect((await call(operatorA, 'GET', `/v1/runs/${encodeURIComponent(child)}`)).status).toBe(200);
  const listed = await waitFor(async () => {
    const runs = (await call(operatorA, 'GET', `/v1/runs?parent=${encodeURIComponent(parent.body.workflowId)}`)).body.runs as Array<{ workflowId: string }>;
    return runs.length ? runs : undefined;
  }, 10_000, 'the child in tenant a\'s list');
  expect(listed.map((r) => r.workflowId)).toEqual([child]);
  expect((await call(viewerB, 'GET', `/v1/runs/${encodeURIComponent(child)}`)).status).toBe(404);
  expect((await call(viewerB, 'GET', `/v1/runs?parent=${encodeURIComponent(parent.body.workflowId)}`)).body.runs).toEqual([]);

  // A fork, asked by a's operator or by the service, is a's.
  const idA = await runOf('tenant-a');
  for (const [who, token] of [['operator', operatorA], ['service', TOKEN]] as const) {
    const fork = await call(token, 'POST', `/v1/runs/${idA}/fork`, { fromStep: 1 });
    expect([who, fork.status]).toEqual([who, 201]);
    expect((await call(operatorA, 'GET', `/v1/runs/${fork.body.workflowId}`)).status).toBe(200);
    expect((await call(viewerB, 'GET', `/v1/runs/${fork.body.workflowId}`)).status).toBe(404);
  }
  const forks = await waitFor(async () => {
    const runs = (await call(operatorA, 'GET', `/v1/runs?forkOf=${idA}`)).body.runs as unknown[];
    return runs.length === 2 ? runs : undefined;
  }, 10_000, 'both forks in tenant a\'s list');
  expect(forks).toHaveLength(2);

  // b cannot start a run under the id of a's (closed) run, which would then lead a to b's run.
  const operatorB = await jwt({ tenant: 'tenant-b', roles: ['operator'] });
  const taken = await call(operatorB, 'POST', `/v1/runs?workflowId=${idA}`, { prompt: 'x', model: 'tenancy-answer' });
  expect([taken.status, taken.body.error.code]).toEqual([409, 'already_started']);
  expect((await call(operatorA, 'GET', `/v1/runs/${idA}`)).body.state).toBe('COMPLETED');
}, 60_000);

test('a stream token carries its tenant: the run\'s own tenant follows it with ?token=', async () => {
  const idA = await runOf('tenant-a');
  const viewerA = await jwt({ tenant: 'tenant-a', roles: ['viewer'] });
  const issued = await call(viewerA, 'POST', `/v1/runs/${idA}/stream-token`);
  expect(issued.status).toBe(201);
  const res = await app.inject({ method: 'GET', url: `/v1/runs/${idA}/events?token=${encodeURIComponent(issued.body.token)}` });
  expect(res.statusCode).toBe(200);
  expect(res.body).toContain('event: end');
});

test("an approval through the gateway records its approver, the JWT's sub and tenant, in the run's state", async () => {
  h.model.register('tenancy-approve', ({ request }) =>
    request.messages.some((m: { role: string }) => m.role === 'tool') ? { text: 'read it' } : { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] },
  );
  const operator = await jwt({ tenant: 'tenant-a', sub: 'olga', roles: ['operator'] });
  const approver = await jwt({ tenant: 'tenant-a', sub: 'alice', roles: ['approver'] });
  const started = await call(operator, 'POST', '/v1/runs', { prompt: 'read hello.txt', model: 'tenancy-approve', tools: ['readFile'], approval: { tools: ['readFile'] } });
  expect(started.status).toBe(201);
  const id = started.body.workflowId as string;
  let waiting: { state: string; pendingApproval: Array<{ toolCallId: string }> } | undefined;
  await waitFor(
    async () => {
      waiting = (await call(operator, 'GET', `/v1/runs/${id}`)).body;
      return waiting?.state === 'AWAITING_APPROVAL' ? waiting : undefined;
    },
    20_000,
    'the run to wait for approval',
  );
  // An operator may not approve; the approver may.
  expect((await call(operator, 'POST', `/v1/runs/${id}/approvals`, { toolCallId: waiting!.pendingApproval[0].toolCallId, approved: true })).status).toBe(403);
  expect((await call(approver, 'POST', `/v1/runs/${id}/approvals`, { toolCallId: waiting!.pendingApproval[0].toolCallId, approved: true })).status).toBe(200);
  expect((await call(operator, 'GET', `/v1/runs/${id}/result`)).body).toMatchObject({ status: 'COMPLETED', answer: 'read it' });
  const view = (await call(operator, 'GET', `/v1/runs/${id}`)).body;
  const alice = { kind: 'user', sub: 'alice', tenant: 'tenant-a' };
  expect(view.recentToolCalls).toEqual([expect.objectContaining({ name: 'readFile', decidedBy: alice, decidedAt: expect.any(String) })]);
  expect(view.controls).toEqual([expect.objectContaining({ by: alice })]);
});

test("memory through the gateway is the caller's tenant's: another tenant finds nothing, as if nothing were there; a run's memories are its tenant's", async () => {
  const a = await jwt({ tenant: 'tenant-a', roles: ['operator'] });
  const b = await jwt({ tenant: 'tenant-b', roles: ['operator'] });
  const put = await call(a, 'PUT', '/v1/memory/team/keys/roadmap', { text: 'Ship the billing page in March', metadata: { by: 'alice' } });
  expect([put.status, put.body]).toEqual([200, expect.objectContaining({ namespace: 'team', key: 'roadmap', version: 1, metadata: { by: 'alice' } })]);
  expect((await call(a, 'GET', '/v1/memory/team/keys/roadmap')).body).toMatchObject({ text: 'Ship the billing page in March' });
  expect((await call(a, 'POST', '/v1/memory/team/search', { query: 'billing' })).body.hits.map((m: { key: string }) => m.key)).toEqual(['roadmap']);
  // Tenant b: the key is not found, with the body of a key that never was; lists and searches are empty; a delete finds nothing.
  const probe = await call(b, 'GET', '/v1/memory/team/keys/roadmap');
  const never = await call(b, 'GET', '/v1/memory/team/keys/never-was');
  expect([probe.status, probe.body]).toEqual([404, { error: { code: 'memory_not_found', message: 'no memory roadmap in namespace team' } }]);
  expect(JSON.stringify(never.body).replace('never-was', 'roadmap')).toBe(JSON.stringify(probe.body));
  expect((await call(b, 'GET', '/v1/memory/team')).body).toEqual({ memories: [], next: null });
  expect((await call(b, 'POST', '/v1/memory/team/search', { query: 'billing page march' })).body).toEqual({ hits: [] });
  expect((await call(b, 'DELETE', '/v1/memory/team/keys/roadmap')).status).toBe(404);
  // Its own write under the same name is its own memory; tenant a's is untouched.
  expect((await call(b, 'PUT', '/v1/memory/team/keys/roadmap', { text: 'b plan' })).body).toMatchObject({ text: 'b plan', version: 1 });
  expect((await call(a, 'GET', '/v1/memory/team/keys/roadmap')).body).toMatchObject({ text: 'Ship the billing page in March', version: 1 });
  // The service writes the default tenant's memories, where runs without a tenant keep theirs: not tenant a's.
  expect((await call(TOKEN, 'GET', '/v1/memory/team/keys/roadmap')).status).toBe(404);
  // A viewer reads but cannot write.
  const viewer = await jwt({ tenant: 'tenant-a', roles: ['viewer'] });
  expect((await call(viewer, 'GET', '/v1/memory/team')).body.memories).toHaveLength(1);
  expect((await call(viewer, 'PUT', '/v1/memory/team/keys/x', { text: 'y' })).status).toBe(403);

  // A run tenant a starts through the gateway remembers in tenant a, where tenant a's reads find it and tenant b's do not.
  h.model.register('tenancy-remember', [{ toolCalls: [{ name: 'remember', arguments: { key: 'deadline', text: 'The billing page is due March 31' } }] }, { text: 'noted' }]);
  const started = await call(a, 'POST', '/v1/runs', { prompt: 'remember the deadline', model: 'tenancy-remember', tools: ['remember'], memory: { namespace: 'team' } });
  expect((await call(a, 'GET', `/v1/runs/${started.body.workflowId}/result`)).body).toMatchObject({ status: 'COMPLETED', answer: 'noted' });
  expect((await call(a, 'GET', '/v1/memory/team/keys/deadline')).body).toMatchObject({ text: 'The billing page is due March 31' });
  expect((await call(b, 'GET', '/v1/memory/team/keys/deadline')).status).toBe(404);
  // A run's input cannot name another tenant: the gateway sets it from the caller.
  h.model.register('tenancy-remember', [{ toolCalls: [{ name: 'remember', arguments: { key: 'deadline', text: 'The billing page is due March 31' } }] }, { text: 'noted' }]);
  const forged = await call(b, 'POST', '/v1/runs', { prompt: 'x', model: 'tenancy-remember', tools: ['remember'], memory: { namespace: 'team' }, tenant: 'tenant-a' });
  expect((await call(b, 'GET', `/v1/runs/${forged.body.workflowId}/result`)).body).toMatchObject({ status: 'COMPLETED' });
  expect(await memory.list({ namespace: 'team', tenant: 'tenant-a' })).toMatchObject({ memories: [expect.objectContaining({ key: 'deadline' }), expect.objectContaining({ key: 'roadmap' })] });
  expect((await call(b, 'GET', '/v1/memory/team/keys/deadline')).body).toMatchObject({ text: 'The billing page is due March 31' });
});
