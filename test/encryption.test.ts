/**
 * Payload encryption: the codec as a unit (round trip, key rotation, tampering), its composition with the claim check,
 * then the production worker and client on the real dev server, where history must hold no plaintext, and the codec
 * server that lets the CLI (and the Web UI) read it back.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, type Dirent } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { decodeFromPayloadsAtIndex, loadDataConverter } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import type { FastifyInstance } from 'fastify';
import { ensureTemporalCli } from '../scripts/lib/temporal-cli';
import { AgentClient, failureReason } from '../src/client';
import {
  CLAIM_CHECK_ENCODING,
  ClaimCheckCodec,
  createDataConverter,
  ENCRYPTED_ENCODING,
  ENCRYPTED_FAILURE_CONVERTER_PATH,
  EncryptionCodec,
  EncryptionKeyNotFoundError,
  isClaimCheckReference,
  isEncrypted,
  PayloadDecryptionError,
} from '../src/codec';
import { createCodecServer } from '../src/codec/server';
import { codecSettings, encryptionSettings, workerConfig } from '../src/config';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { createAgentWorker, type AgentWorker } from '../src/worker';
import { buildWorkflowBundles } from '../src/worker/workflow-bundle';
import { quietRuntime } from './support/agent-harness';
import { testServerAddress } from './support/temporal';

const exec = promisify(execFile);
const ProtoPayload = temporal.api.common.v1.Payload;
const tempDir = (prefix: string) => mkdtempSync(path.join(os.tmpdir(), prefix));
const newKey = () => randomBytes(32);
const json = (value: unknown) => defaultPayloadConverter.toPayload(value);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');

function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[]).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('EncryptionCodec', () => {
  const k1 = newKey();
  const k2 = newKey();

  test('round trip: the payload, metadata included, comes back; the wire form is IV + ciphertext + tag under the key id', async () => {
    const codec = new EncryptionCodec({ keys: { k1 }, currentKeyId: 'k1' });
    const original = json({ prompt: 'the secret plan' });
    const [encrypted] = await codec.encode([original]);
    expect(text(encrypted.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(encrypted.metadata!['encryption-key-id'])).toBe('k1');
    expect(Object.keys(encrypted.metadata!)).toEqual(['encoding', 'encryption-key-id']);
    expect(encrypted.data!.length).toBe(12 + ProtoPayload.encode(original).finish().length + 16);
    expect(text(encrypted.data)).not.toContain('secret plan');
    expect(await codec.decode([encrypted])).toEqual([ProtoPayload.decode(ProtoPayload.encode(original).finish())]);
    expect(defaultPayloadConverter.fromPayload((await codec.decode([encrypted]))[0])).toEqual({ prompt: 'the secret plan' });
    // A fresh IV per payload: the same value never encrypts to the same bytes.
    const [again] = await codec.encode([original]);
    expect(Buffer.compare(Buffer.from(again.data!), Buffer.from(encrypted.data!))).not.toBe(0);
    expect(Buffer.from(again.data!.subarray(0, 12)).equals(Buffer.from(encrypted.data!.subarray(0, 12)))).toBe(false);
  });

  test('payloads that are not encrypted pass decode untouched', async () => {
    const codec = new EncryptionCodec({ keys: { k1 }, currentKeyId: 'k1' });
    const plain = json('hello');
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  test('rotation: after the current key changes, payloads of the old key still decode and new ones use the new key', async () => {
    const before = new EncryptionCodec({ keys: { k1 }, currentKeyId: 'k1' });
    const [old] = await before.encode([json({ n: 1 })]);
    const after = new EncryptionCodec({ keys: { k2, k1 }, currentKeyId: 'k2' });
    expect(defaultPayloadConverter.fromPayload((await after.decode([old]))[0])).toEqual({ n: 1 });
    const [fresh] = await after.encode([json({ n: 2 })]);
    expect(text(fresh.metadata!['encryption-key-id'])).toBe('k2');
    // A process that still has only the old key cannot read the new payload, and says which key it lacks.
    await expect(before.decode([fresh])).rejects.toThrow(EncryptionKeyNotFoundError);
    await expect(before.decode([fresh])).rejects.toThrow('payload is encrypted with key "k2", which is not configured (known keys: k1)');
  });

  test('a retired key that history still needs fails with an error naming it', async () => {
    const [old] = await new EncryptionCodec({ keys: { k1 }, currentKeyId: 'k1' }).encode([json('x')]);
    const err = await new EncryptionCodec({ keys: { k2 }, currentKeyId: 'k2' }).decode([old]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EncryptionKeyNotFoundError);
    expect((err as EncryptionKeyNotFoundError).keyId).toBe('k1');
  });

  test('tampered ciphertext, tag, IV or key id, and a wrong key, are rejected', async () => {
    const codec = new EncryptionCodec({ keys: { k1, k2 }, currentKeyId: 'k1' });
    const [good] = await codec.encode([json({ amount: 100 })]);
    const flip = (at: number): Payload => {
      const data = Buffer.from(good.data!);
      data[at] ^= 0x01;
      return { ...good, data };
    };
    const n = good.data!.length;
    for (const at of [0, 12, n - 17, n - 1]) await expect(codec.decode([flip(at)])).rejects.toThrow(PayloadDecryptionError);
    await expect(codec.decode([{ ...good, data: good.data!.subarray(0, 20) }])).rejects.toThrow('failed authentication');
    // Relabelled to another configured key: the key id is authenticated data, so this fails too.
    const relabelled = { ...good, metadata: { ...good.metadata, 'encryption-key-id': Buffer.from('k2') } };
    await expect(codec.decode([relabelled])).rejects.toThrow('payload encrypted with key "k2" failed authentication');
    const wrongKey = new EncryptionCodec({ keys: { k1: k2 }, currentKeyId: 'k1' });
    await expect(wrongKey.decode([good])).rejects.toThrow(PayloadDecryptionError);
    expect(defaultPayloadConverter.fromPayload((await codec.decode([good]))[0])).toEqual({ amount: 100 });
  });

  test('bad keys are refused when the codec is built', () => {
    expect(() => new EncryptionCodec({ keys: { k1: randomBytes(16) }, currentKeyId: 'k1' })).toThrow('encryption key "k1" must be 32 bytes, got 16');
    expect(() => new EncryptionCodec({ keys: { k1 }, currentKeyId: 'k9' })).toThrow('the current encryption key "k9" is not among the keys (k1)');
  });
});

describe('encryptionSettings', () => {
  const a = newKey().toString('base64');
  const b = newKey().toString('base64');

  test('off without keys; the first key is current; AGENT_ENCRYPTION_KEY_ID selects another', () => {
    expect(encryptionSettings({})).toBeUndefined();
    expect(encryptionSettings({ AGENT_ENCRYPTION_KEYS: ' ' })).toBeUndefined();
    const keys = encryptionSettings({ AGENT_ENCRYPTION_KEYS: `new:${a}, old:${b}` })!;
    expect(keys.currentKeyId).toBe('new');
    expect(Buffer.from(keys.keys.old).toString('base64')).toBe(b);
    expect(encryptionSettings({ AGENT_ENCRYPTION_KEYS: `new:${a},old:${b}`, AGENT_ENCRYPTION_KEY_ID: 'old' })!.currentKeyId).toBe('old');
    // Integer-like ids keep their listed order (an object would sort them).
    expect(encryptionSettings({ AGENT_ENCRYPTION_KEYS: `2025:${a},2024:${b}` })!.currentKeyId).toBe('2025');
  });

  test('mistakes are refused with the variable and key id named, never the key material', () => {
    const short = randomBytes(16).toString('base64');
    const attempt = (env: NodeJS.ProcessEnv) => {
      try {
        encryptionSettings(env);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('expected an error');
    };
    const message = attempt({ AGENT_ENCRYPTION_KEYS: `k1:${short}` });
    expect(message).toBe('AGENT_ENCRYPTION_KEYS key "k1" must be 32 bytes in base64 (openssl rand -base64 32), got 16 bytes');
    expect(message).not.toContain(short);
    expect(attempt({ AGENT_ENCRYPTION_KEYS: a })).toMatch(/entry 1 must be id:base64key/);
    expect(attempt({ AGENT_ENCRYPTION_KEYS: `k1:not base64!` })).toMatch(/got no valid base64/);
    expect(attempt({ AGENT_ENCRYPTION_KEYS: `k1:${a},k1:${b}` })).toBe('AGENT_ENCRYPTION_KEYS names key "k1" twice');
    expect(attempt({ AGENT_ENCRYPTION_KEYS: `k1:${a}`, AGENT_ENCRYPTION_KEY_ID: 'k2' })).toBe('AGENT_ENCRYPTION_KEY_ID "k2" is not among AGENT_ENCRYPTION_KEYS (k1)');
    expect(attempt({ AGENT_ENCRYPTION_KEY_ID: 'k2' })).toMatch(/AGENT_ENCRYPTION_KEYS is empty/);
  });
});

describe('createDataConverter with encryption', () => {
  const keyEnv = () => ({ AGENT_ENCRYPTION_KEYS: `k1:${newKey().toString('base64')}` });

  test('encryption comes before the claim check, with the failure converter that encrypts error messages', () => {
    const converter = createDataConverter(codecSettings({ ...keyEnv(), AGENT_BLOB_DIR: tempDir('blobs-') }));
    expect(converter.payloadCodecs!.map((c) => c.constructor)).toEqual([EncryptionCodec, ClaimCheckCodec]);
    expect(converter.failureConverterPath).toBe(ENCRYPTED_FAILURE_CONVERTER_PATH);
    expect(require(ENCRYPTED_FAILURE_CONVERTER_PATH).failureConverter.options).toEqual({ encodeCommonAttributes: true });
    const alone = createDataConverter(codecSettings({ ...keyEnv(), AGENT_CLAIM_CHECK: 'off' }));
    expect(alone.payloadCodecs!.map((c) => c.constructor)).toEqual([EncryptionCodec]);
    expect(createDataConverter(codecSettings({})).failureConverterPath).toBeUndefined();
  });

  test('a large payload is encrypted before it is stored: the blob at rest is ciphertext', async () => {
    const blobDir = tempDir('blobs-');
    const codecs = createDataConverter(codecSettings({ ...keyEnv(), AGENT_BLOB_DIR: blobDir, AGENT_CLAIM_CHECK_THRESHOLD: '1024' })).payloadCodecs!;
    const secret = `SECRET-${randomUUID()}`;
    let payloads = [json({ text: secret.repeat(100) })];
    for (const codec of codecs) payloads = await codec.encode(payloads);
    expect(isClaimCheckReference(payloads[0])).toBe(true);
    const [blob] = filesUnder(blobDir);
    expect(readFileSync(blob).includes(secret)).toBe(false);
    expect(isEncrypted(ProtoPayload.decode(readFileSync(blob)))).toBe(true);
    for (const codec of [...codecs].reverse()) payloads = await codec.decode(payloads);
    expect(defaultPayloadConverter.fromPayload(payloads[0])).toEqual({ text: secret.repeat(100) });
  });
});

describe('the production worker and client on the real server, encrypted', () => {
  type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
  const READ = 'read-the-secret';
  const FAIL = 'fail-with-the-secret';
  const PROMPT_SECRET = `PROMPT-${randomUUID()}`;
  const FILE_SECRET = `FILE-${randomUUID()}`;
  const ERROR_SECRET = `ERROR-${randomUUID()}`;
  const TOKEN = randomBytes(24).toString('hex');
  const ORIGIN = 'http://localhost:8233';

  let model: ScriptedModel;
  let agent: AgentWorker;
  let running: Promise<void>;
  let agents: AgentClient;
  /** Reads history as the server stores it: no codec. */
  let raw: Client;
  let env: NodeJS.ProcessEnv;
  let blobDir: string;
  let codecServer: FastifyInstance;
  let codecUrl: string;
  let cli: string;

  beforeAll(async () => {
    quietRuntime();
    model = await startScriptedModel();
    model.register(READ, ({ request }) =>
      request.messages.some((m: { role: string }) => m.role === 'tool')
        ? { text: `The file says ${FILE_SECRET}.` }
        : { toolCalls: [{ name: 'readFile', arguments: { path: 'secret.txt' } }] },
    );
    model.register(FAIL, [{ error: { status: 400, message: `cannot process ${ERROR_SECRET}` } }]);
    const dir = tempDir('agent-enc-');
    const workspace = path.join(dir, 'ws');
    blobDir = path.join(dir, 'blobs');
    mkdirSync(workspace);
    writeFileSync(path.join(workspace, 'secret.txt'), `${FILE_SECRET}\n`);
    // The worker's whole configuration, as in production; no HOME, so no temporal.toml from this machine.
    env = {
      TEMPORAL_ADDRESS: testServerAddress(),
      TEMPORAL_TASK_QUEUE: `enc-${randomUUID()}`,
      LLM_BASE_URL: model.url,
      LLM_API_KEY: 'scripted',
      AGENT_WORKSPACE: workspace,
      AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
      AGENT_BLOB_DIR: blobDir,
      // Low, so model inputs are claim-checked and the blobs at rest can be checked too.
      AGENT_CLAIM_CHECK_THRESHOLD: '512',
      AGENT_ENCRYPTION_KEYS: `k1:${newKey().toString('base64')}`,
    };
    const [worker, cliPath] = await Promise.all([createAgentWorker({ config: workerConfig(env) }), ensureTemporalCli({ quiet: true })]);
    agent = worker;
    cli = cliPath;
    running = agent.run();
    agents = await AgentClient.connect(
      { address: env.TEMPORAL_ADDRESS, namespace: 'default', taskQueue: env.TEMPORAL_TASK_QUEUE },
      { dataConverter: createDataConverter(codecSettings(env)) },
    );
    raw = new Client({ connection: agents.client.connection, namespace: 'default' });
    codecServer = createCodecServer({ codecs: createDataConverter(codecSettings(env)).payloadCodecs!, token: TOKEN, allowedOrigins: [ORIGIN] });
    codecUrl = await codecServer.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    agent?.shutdown();
    await running;
    await agents?.close();
    await codecServer?.close();
    await model?.close();
  });

  const eventBytes = (events: HistoryEvent[]) => Buffer.concat(events.map((e) => temporal.api.history.v1.HistoryEvent.encode(e).finish()));
  const rawHistory = async (workflowId: string) => (await raw.workflow.getHandle(workflowId).fetchHistory()).events ?? [];

  let completedId: string;

  test('no prompt, tool output or answer in history or in the blob store; the codec-aware client reads them all', async () => {
    const run = await agents.start({ prompt: `Read secret.txt. ${PROMPT_SECRET}`, model: READ });
    completedId = run.workflowId;
    const result = await run.result();
    expect(result).toMatchObject({ status: 'COMPLETED', answer: `The file says ${FILE_SECRET}.`, toolCalls: 1 });
    const view = await run.state({ includeMessages: true });
    expect(JSON.stringify(view.messages)).toContain(PROMPT_SECRET);

    const events = await rawHistory(run.workflowId);
    const bytes = eventBytes(events);
    for (const secret of [PROMPT_SECRET, FILE_SECRET, 'secret.txt']) expect(bytes.includes(secret)).toBe(false);
    expect(bytes.includes(ENCRYPTED_ENCODING)).toBe(true);
    expect(bytes.includes(CLAIM_CHECK_ENCODING)).toBe(true);
    const input = events[0].workflowExecutionStartedEventAttributes!.input!.payloads![0] as Payload;
    expect(isEncrypted(input)).toBe(true);

    const blobs = filesUnder(blobDir);
    expect(blobs.length).toBeGreaterThan(0);
    for (const blob of blobs) {
      const stored = readFileSync(blob);
      expect(stored.includes(PROMPT_SECRET) || stored.includes(FILE_SECRET)).toBe(false);
      if (!blob.includes(`${path.sep}packs${path.sep}`)) expect(isEncrypted(ProtoPayload.decode(stored))).toBe(true);
    }
    // The conversation nodes, appended to a pack: each place the model calls' results name holds an encrypted payload
    // (or a claim-check reference), and together they are the whole pack.
    const converter = loadDataConverter(createDataConverter(codecSettings(env)));
    const results = await Promise.all(
      events
        .filter((e) => e.activityTaskCompletedEventAttributes?.result?.payloads)
        .map((e) => decodeFromPayloadsAtIndex<{ conversation?: { at?: string } }>(converter, 0, e.activityTaskCompletedEventAttributes!.result!.payloads as Payload[])),
    );
    const places = results.flatMap((r) => (r?.conversation?.at ? [r.conversation.at] : []));
    expect(places.length).toBeGreaterThan(0);
    const packs = new Map<string, Buffer>();
    let placed = 0;
    for (const at of places) {
      const [, name, offset, length] = /^packs\/(.+)@(\d+)\+(\d+)$/.exec(at)!;
      if (!packs.has(name)) packs.set(name, readFileSync(path.join(blobDir, 'packs', name)));
      // A node larger than the claim check's threshold is there as a reference to a blob of its own, checked above.
      const node = ProtoPayload.decode(packs.get(name)!.subarray(Number(offset), Number(offset) + Number(length)));
      expect(isEncrypted(node) || text(node.metadata?.encoding) === CLAIM_CHECK_ENCODING).toBe(true);
      placed += Number(length);
    }
    expect(placed).toBe([...packs.values()].reduce((n, b) => n + b.length, 0));
  });

  test('the stored copy of the state is encrypted too (or claim-checked), and a client without the keys still lists the run', async () => {
    // The SDK's describe would decode the memo; read the raw one.
    const description = await raw.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: completedId } });
    const memo = description.workflowExecutionInfo?.memo?.fields?.agentState;
    // Encrypted, or (above the claim-check threshold) a reference to an encrypted blob: never the answer in clear.
    expect(memo).toBeDefined();
    expect(isEncrypted(memo as Payload) || text(memo!.metadata?.encoding) === CLAIM_CHECK_ENCODING).toBe(true);
    expect(Buffer.from(temporal.api.common.v1.Payload.encode(memo!).finish()).includes(FILE_SECRET)).toBe(false);
    const listed = await new AgentClient(raw, 'any').list({ state: 'COMPLETED', limit: 1_000 });
    expect(listed.find((r) => r.workflowId === completedId)).toMatchObject({ status: 'COMPLETED', agentState: 'COMPLETED' });
  });

  test('a failure message is encrypted too, and the client still reads the reason', async () => {
    const run = await agents.start({ prompt: 'Go.', model: FAIL });
    const err = await run.result().catch((e: unknown) => e);
    expect(failureReason(err)).toContain(ERROR_SECRET);
    const bytes = eventBytes(await rawHistory(run.workflowId));
    expect(bytes.includes(ERROR_SECRET)).toBe(false);
    expect(bytes.includes('Encoded failure')).toBe(true);
  });

  test('so it is from the prebuilt bundles a deployed worker loads (AGENT_WORKFLOW_BUNDLE_DIR, as the image sets it)', async () => {
    // The bundle compiles the failure converter in: a worker with the keys loads the one that encrypts failure messages.
    const bundles = tempDir('agent-enc-bundles-');
    expect((await buildWorkflowBundles(bundles)).map((f) => path.basename(f))).toEqual(['workflows.js', 'workflows-encrypted.js', 'workflows-tracing.js', 'workflows-tracing-encrypted.js']);
    const taskQueue = `enc-prebuilt-${randomUUID()}`;
    const prebuiltEnv = { ...env, TEMPORAL_TASK_QUEUE: taskQueue, AGENT_WORKFLOW_BUNDLE_DIR: bundles, AGENT_LEDGER: path.join(tempDir('agent-enc-ledger-'), 'ledger.sqlite') };
    const prebuilt = await createAgentWorker({ config: workerConfig(prebuiltEnv) });
    const going = prebuilt.run();
    try {
      model.register(`${FAIL}-prebuilt`, [{ error: { status: 400, message: `cannot process ${ERROR_SECRET}` } }]);
      const run = await new AgentClient(agents.client, taskQueue).start({ prompt: 'Go.', model: `${FAIL}-prebuilt` });
      const err = await run.result().catch((e: unknown) => e);
      expect(failureReason(err)).toContain(ERROR_SECRET);
      const bytes = eventBytes(await rawHistory(run.workflowId));
      expect(bytes.includes(ERROR_SECRET)).toBe(false);
      expect(bytes.includes('Encoded failure')).toBe(true);
    } finally {
      prebuilt.shutdown();
      await going;
    }
  }, 240_000);

  describe('codec server', () => {
    const post = (route: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
      fetch(`${codecUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const toJson = (p: Payload) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
      data: Buffer.from(p.data ?? []).toString('base64'),
    });
    const fromJson = (p: { metadata: Record<string, string>; data: string }): Payload => ({
      metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
      data: Buffer.from(p.data, 'base64'),
    });

    test('POST /decode turns an encrypted payload into plaintext, and /{namespace}/decode resolves a claim check', async () => {
      const [encryption] = createDataConverter(codecSettings(env)).payloadCodecs!;
      const [encrypted] = await encryption.encode([json({ prompt: PROMPT_SECRET })]);
      const res = await post('/decode', { payloads: [toJson(encrypted)] });
      expect(res.status).toBe(200);
      const { payloads } = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
      expect(payloads[0].metadata.encoding).toBe(Buffer.from('json/plain').toString('base64'));
      expect(defaultPayloadConverter.fromPayload(fromJson(payloads[0]))).toEqual({ prompt: PROMPT_SECRET });

      // Model call inputs in history: references to encrypted blobs, resolved and decrypted in one request. With
      // conversation chains, the second call carries only the messages since the first: the tool's output.
      const events = await rawHistory(completedId);
      const references = events
        .map((e) => e.activityTaskScheduledEventAttributes?.input?.payloads?.[0] as Payload | undefined)
        .filter((p): p is Payload => p != null && isClaimCheckReference(p));
      expect(references.length).toBeGreaterThan(0);
      const resolved = await post('/default/decode', { payloads: references.map(toJson) });
      expect(resolved.status).toBe(200);
      const decoded = ((await resolved.json()) as { payloads: { metadata: Record<string, string>; data: string }[] }).payloads;
      expect(decoded).toHaveLength(references.length);
      expect(decoded.map((d) => JSON.stringify(defaultPayloadConverter.fromPayload(fromJson(d)))).join('\n')).toContain(FILE_SECRET);
    });

    test('POST /encode encrypts what /decode reads back', async () => {
      const res = await post('/encode', { payloads: [toJson(json('from the UI'))] });
      const [encoded] = ((await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] }).payloads;
      expect(isEncrypted(fromJson(encoded))).toBe(true);
      const back = await post('/decode', { payloads: [encoded] });
      const [decoded] = ((await back.json()) as { payloads: { metadata: Record<string, string>; data: string }[] }).payloads;
      expect(defaultPayloadConverter.fromPayload(fromJson(decoded))).toBe('from the UI');
    });

    test('without the token, with a wrong one, or from another origin: refused', async () => {
      const body = { payloads: [] };
      const attempts: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: TOKEN }, { authorization: 'Bearer ' }];
      for (const headers of attempts) {
        const res = await post('/decode', body, headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
      expect((await post('/decode', body)).status).toBe(200);
      expect((await post('/decode', body, { authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' })).status).toBe(403);
      expect((await post('/decode', { payloads: 'nope' })).status).toBe(400);
      expect((await post('/somewhere', body)).status).toBe(404);
    });

    test('a CORS preflight from the UI origin is answered for the headers the UI sends', async () => {
      const res = await fetch(`${codecUrl}/decode`, {
        method: 'OPTIONS',
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace,authorization' },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/)).toEqual(
        expect.arrayContaining(['content-type', 'x-namespace', 'authorization']),
      );
      expect(res.headers.get('access-control-allow-credentials')).toBe('true');
      // The actual request from the UI carries the CORS headers too, or the browser hides the answer.
      const answer = await post('/decode', { payloads: [] }, { authorization: `Bearer ${TOKEN}`, origin: ORIGIN, 'x-namespace': 'default' });
      expect(answer.headers.get('access-control-allow-origin')).toBe(ORIGIN);
      const other = await fetch(`${codecUrl}/decode`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    });

    test('temporal workflow show --codec-endpoint --codec-auth prints the decrypted prompt; without them it does not', async () => {
      const show = (...extra: string[]) =>
        // --detailed prints every event's payloads; a clean env keeps TEMPORAL_* and profiles of this machine out.
        exec(cli, ['workflow', 'show', '--workflow-id', completedId, '--address', testServerAddress(), '--detailed', ...extra], { env: { PATH: process.env.PATH } });
      const decoded = await show('--codec-endpoint', codecUrl, '--codec-auth', `Bearer ${TOKEN}`);
      expect(decoded.stdout).toContain(PROMPT_SECRET);
      expect(decoded.stdout).toContain(FILE_SECRET);
      const encoded = await show();
      expect(encoded.stdout).not.toContain(PROMPT_SECRET);
    });
  });
});
