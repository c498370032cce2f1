/**
 * The claim-check codec: the blob store and the codec as units, then agentRun end to end on the real dev server, where
 * large payloads must leave history as references and history must grow by a flat amount per step.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync, type Dirent } from 'node:fs';
import * as fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { defaultPayloadConverter, type DataConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  BlobNotFoundError,
  CLAIM_CHECK_ENCODING,
  ClaimCheckCodec,
  claimCheckDataConverter,
  createDataConverter,
  FsBlobStore,
  isClaimCheckReference,
} from '../src/codec';
import { WORKFLOW_TYPE } from '../src/common/constants';
import type { AgentRunInput } from '../src/common/input';
import { stateQuery, type AgentRunResult } from '../src/common/messages';
import { claimCheckSettings, codecSettings } from '../src/config';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { agentWorkerOptions, openAIClient } from '../src/worker';
import { quietRuntime, workflowBundle } from './support/agent-harness';
import { testServerAddress } from './support/temporal';
import { streamSinks } from '../src/stream/sinks';
import { closeSafeConnectionPlugin } from '../src/config/connection';

const utf8 = new TextEncoder();
const tempDir = (prefix: string) => mkdtempSync(path.join(os.tmpdir(), prefix));
const payloadSize = (p: Payload) => temporal.api.common.v1.Payload.encode(p).finish().length;
const jsonPayload = (value: unknown) => defaultPayloadConverter.toPayload(value);

/** Every file under `dir`, relative, sorted; temp files included. */
function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

const KEY = 'ab'.repeat(32);

describe('FsBlobStore', () => {
  test('stores a blob under ab/<hash> and reads it back', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    const key = 'abcd' + '0'.repeat(60);
    await store.put(key, utf8.encode('hello'));
    expect(filesUnder(dir)).toEqual([path.join('ab', key)]);
    expect(Buffer.from(await store.get(key)).toString()).toBe('hello');
  });

  test('blobs of the layout before 2026-11-26 (ab/cd/<hash>) are still read, and not written again', async () => {
    const dir = tempDir('blobs-');
    const key = 'abcd' + '1'.repeat(60);
    const legacy = path.join(dir, 'ab', 'cd', key);
    mkdirSync(path.dirname(legacy), { recursive: true });
    writeFileSync(legacy, 'from an older worker');
    const store = new FsBlobStore(dir);
    expect(Buffer.from(await store.get(key)).toString()).toBe('from an older worker');
    await store.put(key, utf8.encode('from an older worker'));
    expect(filesUnder(dir)).toEqual([path.join('ab', 'cd', key)]);
  });

  test('a store makes one folder for every 256th of the key space, however many blobs it holds', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    const keys = Array.from({ length: 300 }, (_, i) => createHash('sha256').update(String(i)).digest('hex'));
    await Promise.all(keys.map((key) => store.put(key, utf8.encode(key), { fresh: true })));
    // Every folder at any depth: the layout before made a second level, one folder for nearly every blob here.
    const folders = (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[]).filter((e) => e.isDirectory());
    expect(folders.length).toBe(new Set(keys.map((k) => k.slice(0, 2))).size);
    expect(folders.length).toBeLessThanOrEqual(256);
    expect(filesUnder(dir)).toHaveLength(300);
  });

  test('a second put of the same key writes nothing: the blob is only touched, for the retention sweep', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    await store.put(KEY, utf8.encode('first'));
    const before = await fsp.stat(store.pathOf(KEY));
    // Keys are content hashes, so different bytes under one key never happen in use; here they show nothing was written.
    await store.put(KEY, utf8.encode('second'));
    const after = await fsp.stat(store.pathOf(KEY));
    expect(Buffer.from(await store.get(KEY)).toString()).toBe('first');
    expect(after.ino).toBe(before.ino);
    expect(after.mtimeMs).toBeGreaterThanOrEqual(before.mtimeMs);
    expect(filesUnder(dir)).toHaveLength(1);
  });

  test('a fresh put does not look for the key first: one already present is replaced by the same bytes, whole', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    await store.put(KEY, utf8.encode('node'));
    const before = await fsp.stat(store.pathOf(KEY));
    await store.put(KEY, utf8.encode('node'), { fresh: true });
    expect((await fsp.stat(store.pathOf(KEY))).ino).not.toBe(before.ino);
    expect(Buffer.from(await store.get(KEY)).toString()).toBe('node');
    expect(filesUnder(dir)).toEqual([path.join('ab', KEY)]);
  });

  test('a folder removed after this process made it (a wiped store) is made again', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    const other = 'ab'.repeat(31) + 'cd';
    await store.put(KEY, utf8.encode('first'));
    await fsp.rm(path.join(dir, 'ab'), { recursive: true });
    await store.put(other, utf8.encode('second'), { fresh: true });
    expect(filesUnder(dir)).toEqual([path.join('ab', other)]);
    expect(Buffer.from(await store.get(other)).toString()).toBe('second');
  });

  test('a missing blob fails with an error that names the key and the store', async () => {
    const dir = tempDir('blobs-');
    const err = await new FsBlobStore(dir).get(KEY).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobNotFoundError);
    expect((err as BlobNotFoundError).key).toBe(KEY);
    expect((err as Error).message).toBe(`claim-check blob ${KEY} not found in ${dir}`);
  });

  test('a key that is not a sha256 digest is refused, so no key can leave the folder', async () => {
    const store = new FsBlobStore(tempDir('blobs-'));
    await expect(store.put('../../etc/passwd', utf8.encode('x'))).rejects.toThrow(/invalid blob key "..\/..\/etc\/passwd"/);
    await expect(store.get('ABC')).rejects.toThrow(/invalid blob key/);
  });

  test('a reader never sees a partial blob under the final name', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    const bytes = randomBytes(32 * 1024 * 1024);
    const final = store.pathOf(KEY);
    const seen: number[] = [];
    let sawTempFile = false;
    let done = false;
    const writing = store.put(KEY, bytes).finally(() => (done = true));
    while (!done) {
      const size = await fsp.stat(final).then((s) => s.size, () => -1);
      if (size >= 0) seen.push(size);
      const names = await fsp.readdir(path.dirname(final)).catch(() => []);
      sawTempFile ||= names.some((n) => n.endsWith('.tmp'));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await writing;
    // The polling did run while the bytes were being written, and it never saw them under the final name unfinished.
    expect(sawTempFile).toBe(true);
    expect(seen.every((size) => size === bytes.length)).toBe(true);
    expect(filesUnder(dir)).toEqual([path.join('ab', KEY)]);
    expect(Buffer.compare(Buffer.from(await store.get(KEY)), bytes)).toBe(0);
  });

  test('a blob is flushed to disk, file and folder, unless its caller does without it (durable: false) or the store is told not to', async () => {
    const dir = tempDir('blobs-');
    // FileHandle is not exported: its prototype is reached through a handle.
    const probe = await fsp.open(dir, 'r');
    const FileHandleProto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const sync = jest.spyOn(FileHandleProto, 'sync');
    try {
      const store = new FsBlobStore(dir);
      await store.put(KEY, utf8.encode('a')); // its shard folder is new: folder, blob, blob's folder
      const first = sync.mock.calls.length;
      expect(first).toBe(3);
      // Two more keys in the same shard folder, which is there now: no folder to make.
      const [b, c] = ['c', 'd'].map((x) => `ab${x.repeat(62)}`);
      await store.put(b, utf8.encode('b'), { durable: false });
      expect(sync.mock.calls.length).toBe(first);
      await store.put(c, utf8.encode('c'));
      expect(sync.mock.calls.length).toBe(first + 2);
      const unflushed = new FsBlobStore(tempDir('blobs-'), { fsync: false });
      await unflushed.put(KEY, utf8.encode('a'));
      expect(sync.mock.calls.length).toBe(first + 2);
      // Flushed or not, a blob is there whole under its name.
      expect(Buffer.from(await store.get(b)).toString()).toBe('b');
    } finally {
      sync.mockRestore();
    }
  });

  test('a blob its caller can rebuild (durable: false) is written under its final name at once, and a fresh put mends a torn one', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    // The module object FsBlobStore calls through (an `import * as` namespace copies it).
    const rename = jest.spyOn(require('node:fs/promises') as typeof fsp, 'rename');
    try {
      await store.put(KEY, utf8.encode('whole'), { fresh: true, durable: false });
      expect(rename).not.toHaveBeenCalled();
      expect(filesUnder(dir)).toEqual([path.join('ab', KEY)]);
      // Torn by a crash: the next fresh put of the key writes it whole again, over what is there.
      writeFileSync(store.pathOf(KEY), 'wh');
      await store.put(KEY, utf8.encode('whole'), { fresh: true, durable: false });
      expect(Buffer.from(await store.get(KEY)).toString()).toBe('whole');
      // Its shard folder wiped since this process made it: made again.
      await fsp.rm(path.join(dir, 'ab'), { recursive: true });
      await store.put(KEY, utf8.encode('whole'), { fresh: true, durable: false });
      expect(Buffer.from(await store.get(KEY)).toString()).toBe('whole');
      expect(rename).not.toHaveBeenCalled();
      // A durable blob still goes through a temporary file.
      await store.put(`ab${'e'.repeat(62)}`, utf8.encode('e'));
      expect(rename).toHaveBeenCalledTimes(1);
    } finally {
      rename.mockRestore();
    }
  });

  test('a write that fails leaves neither the blob nor a temp file behind', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    // A non-empty folder where the blob should go makes the final rename fail.
    await fsp.mkdir(path.join(store.pathOf(KEY), 'occupied'), { recursive: true });
    await expect(store.put(KEY, utf8.encode('x'))).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST|EPERM/);
    expect(filesUnder(dir)).toEqual([]);
    await expect(store.get(KEY)).rejects.toThrow();
    // Once the obstacle is gone the next attempt succeeds.
    await fsp.rm(store.pathOf(KEY), { recursive: true });
    await store.put(KEY, utf8.encode('x'));
    expect(Buffer.from(await store.get(KEY)).toString()).toBe('x');
  });
});

describe('FsBlobStore packs (append)', () => {
  const keyOf = (text: string) => createHash('sha256').update(text).digest('hex');

  test('blobs appended by one store go into one pack file, each read back by the place append gave', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    const texts = Array.from({ length: 50 }, (_, i) => `node ${i} `.repeat(i + 1));
    // All at once, as concurrent model calls append: each gets a range of its own.
    const places = await Promise.all(texts.map((t) => store.append(keyOf(t), utf8.encode(t))));
    const files = filesUnder(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(new RegExp(`^packs/${os.hostname().replace(/[^A-Za-z0-9.-]/g, '_')}-${process.pid}-[0-9a-z]+-[0-9a-f]{8}\\.pack$`));
    expect((await fsp.stat(path.join(dir, files[0]))).size).toBe(texts.reduce((n, t) => n + Buffer.byteLength(t), 0));
    expect(new Set(places).size).toBe(texts.length);
    for (const [i, t] of texts.entries()) {
      expect(places[i]).toMatch(/^packs\/[^/]+\.pack@\d+\+\d+$/);
      expect(Buffer.from(await store.get(keyOf(t), places[i])).toString()).toBe(t);
    }
    // Another worker on the volume (nothing in memory) reads it by its place too; by its key alone it is not found.
    const other = new FsBlobStore(dir);
    expect(Buffer.from(await other.get(keyOf(texts[7]), places[7])).toString()).toBe(texts[7]);
    await expect(other.get(keyOf(texts[7]))).rejects.toThrow(BlobNotFoundError);
  });

  test('two stores on one folder (two workers) write packs of their own; a full pack is followed by a new one', async () => {
    const dir = tempDir('blobs-');
    const a = new FsBlobStore(dir, { packMaxBytes: 100 });
    const b = new FsBlobStore(dir, { packMaxBytes: 100 });
    const big = 'x'.repeat(60);
    const inA = [await a.append(keyOf('a1'), utf8.encode(big)), await a.append(keyOf('a2'), utf8.encode(big)), await a.append(keyOf('a3'), utf8.encode('small'))];
    const inB = await b.append(keyOf('b1'), utf8.encode(big));
    const packOf = (at: string | undefined) => at!.split('@')[0];
    // 60 + 60 > 100: the second blob starts a new pack, which the third still fits into; b never writes into a's.
    expect(packOf(inA[1])).not.toBe(packOf(inA[0]));
    expect(packOf(inA[2])).toBe(packOf(inA[1]));
    expect(inA[2]).toMatch(/@60\+5$/);
    expect([packOf(inA[0]), packOf(inA[1])]).not.toContain(packOf(inB));
    expect(filesUnder(dir)).toHaveLength(3);
    expect(Buffer.from(await b.get(keyOf('a3'), inA[2])).toString()).toBe('small');
    expect(Buffer.from(await a.get(keyOf('b1'), inB)).toString()).toBe(big);
  });

  test('a pack cut short by a crash reads short, and a swept one falls back to the key', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir);
    const at = await store.append(keyOf('whole'), utf8.encode('whole'));
    const [pack] = filesUnder(dir);
    await fsp.truncate(path.join(dir, pack), 2);
    expect(Buffer.from(await store.get(keyOf('whole'), at)).toString()).toBe('wh'); // the caller's hash check catches it
    await fsp.rm(path.join(dir, pack));
    await expect(store.get(keyOf('whole'), at)).rejects.toThrow(`claim-check blob ${keyOf('whole')} not found in ${dir}`);
    // A wiped packs folder is made again by the next append.
    await fsp.rm(path.join(dir, 'packs'), { recursive: true });
    const again = await new FsBlobStore(dir).append(keyOf('again'), utf8.encode('again'));
    expect(Buffer.from(await store.get(keyOf('again'), again)).toString()).toBe('again');
  });

  test('a place that is not one append gives is refused without reading outside the packs; a bad key too', async () => {
    const dir = tempDir('blobs-');
    writeFileSync(path.join(dir, 'secret.pack'), 'secret');
    const store = new FsBlobStore(dir);
    for (const at of ['packs/../secret.pack@0+6', '../secret.pack@0+6', 'packs/x.pack@-1+6', 'packs/x.pack', `packs/x.pack@0+${2 ** 40}`]) {
      const err = await store.get(KEY, at).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlobNotFoundError);
      expect((err as Error).message).toBe(`claim-check blob ${KEY} not found in ${dir} (invalid location ${JSON.stringify(at)}: expected packs/<name>.pack@<offset>+<length>)`);
    }
    await expect(store.append('../../etc/passwd', utf8.encode('x'))).rejects.toThrow(/invalid blob key/);
  });

  test('with packs off, append writes the blob as a file under its key and gives no place', async () => {
    const dir = tempDir('blobs-');
    const store = new FsBlobStore(dir, { packs: false });
    await expect(store.append(KEY, utf8.encode('node'))).resolves.toBeUndefined();
    expect(filesUnder(dir)).toEqual([path.join('ab', KEY)]);
    expect(Buffer.from(await store.get(KEY)).toString()).toBe('node');
  });
});

describe('ClaimCheckCodec', () => {
  const codecIn = (dir = tempDir('blobs-'), thresholdBytes = 1024) => ({ dir, codec: new ClaimCheckCodec({ store: new FsBlobStore(dir), thresholdBytes }) });

  test('a small payload passes through untouched and stores nothing', async () => {
    const { dir, codec } = codecIn();
    const small = jsonPayload({ prompt: 'hi' });
    const [encoded] = await codec.encode([small]);
    expect(encoded).toBe(small);
    expect(filesUnder(dir)).toEqual([]);
    expect(await codec.decode([encoded])).toEqual([small]);
  });

  test('a large payload becomes a reference and decodes back to the same payload', async () => {
    const { dir, codec } = codecIn();
    const large = jsonPayload({ text: 'x'.repeat(5_000) });
    const [ref] = await codec.encode([large]);
    expect(isClaimCheckReference(ref)).toBe(true);
    expect(Buffer.from(ref.metadata!.encoding!).toString()).toBe(CLAIM_CHECK_ENCODING);
    expect(Number(Buffer.from(ref.metadata!['claim-check-size']!).toString())).toBe(payloadSize(large));
    const key = Buffer.from(ref.data!).toString();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(payloadSize(ref)).toBeLessThan(200);
    expect(filesUnder(dir)).toEqual([path.join(key.slice(0, 2), key)]);

    const [decoded] = await codec.decode([ref]);
    expect(defaultPayloadConverter.fromPayload(decoded)).toEqual({ text: 'x'.repeat(5_000) });
    expect(Buffer.from(decoded.metadata!.encoding!).toString()).toBe('json/plain');
  });

  test('the threshold is on the serialized size: at it stays inline, one byte over goes out', async () => {
    const payload = jsonPayload('y'.repeat(2_000));
    const size = payloadSize(payload);
    const at = new ClaimCheckCodec({ store: new FsBlobStore(tempDir('blobs-')), thresholdBytes: size });
    const below = new ClaimCheckCodec({ store: new FsBlobStore(tempDir('blobs-')), thresholdBytes: size - 1 });
    expect(isClaimCheckReference((await at.encode([payload]))[0])).toBe(false);
    expect(isClaimCheckReference((await below.encode([payload]))[0])).toBe(true);
  });

  test('identical payloads are one blob; different ones are two', async () => {
    const { dir, codec } = codecIn();
    const a = jsonPayload({ text: 'a'.repeat(4_000) });
    const b = jsonPayload({ text: 'b'.repeat(4_000) });
    const [ra1, rb, ra2] = await codec.encode([a, b, a]);
    const [ra3] = await codec.encode([jsonPayload({ text: 'a'.repeat(4_000) })]);
    expect(ra1).toEqual(ra2);
    expect(ra1).toEqual(ra3);
    expect(rb).not.toEqual(ra1);
    expect(filesUnder(dir)).toHaveLength(2);
  });

  test('a reference whose blob is gone fails to decode with the key in the message', async () => {
    const { codec } = codecIn();
    const [ref] = await codec.encode([jsonPayload('z'.repeat(3_000))]);
    const elsewhere = new ClaimCheckCodec({ store: new FsBlobStore(tempDir('blobs-')) });
    const key = Buffer.from(ref.data!).toString();
    await expect(elsewhere.decode([ref])).rejects.toThrow(`claim-check blob ${key} not found in`);
  });

  test('a blob that does not hash to its key is refused', async () => {
    const { dir, codec } = codecIn();
    const [ref] = await codec.encode([jsonPayload('z'.repeat(3_000))]);
    const key = Buffer.from(ref.data!).toString();
    writeFileSync(new FsBlobStore(dir).pathOf(key), temporal.api.common.v1.Payload.encode(jsonPayload('tampered')).finish());
    await expect(codec.decode([ref])).rejects.toThrow(`claim-check blob ${key} is corrupt`);
  });

  test('payloads of other encodings pass through decode', async () => {
    const { codec } = codecIn();
    const binary: Payload = { metadata: { encoding: utf8.encode('binary/plain') }, data: new Uint8Array([1, 2, 3]) };
    expect(await codec.decode([binary])).toEqual([binary]);
  });
});

describe('createDataConverter with codecSettings from the environment', () => {
  test('is on by default, with blobs under ./.agent/blobs and the 32 KiB threshold', () => {
    expect(claimCheckSettings({})).toEqual({ enabled: true, blobDir: path.resolve('.agent/blobs') });
    const [codec] = createDataConverter(codecSettings({})).payloadCodecs as ClaimCheckCodec[];
    expect(codec).toBeInstanceOf(ClaimCheckCodec);
    expect(codec.thresholdBytes).toBe(32 * 1024);
    expect((codec.store as FsBlobStore).dir).toBe(path.resolve('.agent/blobs'));
  });

  test('reads AGENT_BLOB_DIR (from the working directory) and AGENT_CLAIM_CHECK_THRESHOLD', () => {
    const [codec] = createDataConverter(codecSettings({ AGENT_BLOB_DIR: 'tmp/b', AGENT_CLAIM_CHECK_THRESHOLD: '1000' })).payloadCodecs as ClaimCheckCodec[];
    expect(codec.thresholdBytes).toBe(1000);
    expect((codec.store as FsBlobStore).dir).toBe(path.resolve('tmp/b'));
  });

  test('AGENT_CLAIM_CHECK=off leaves the SDK defaults', () => {
    expect(createDataConverter(codecSettings({ AGENT_CLAIM_CHECK: 'off' }))).toEqual({});
  });

  test('bad values are refused with the variable named', () => {
    expect(() => createDataConverter(codecSettings({ AGENT_CLAIM_CHECK: 'maybe' }))).toThrow(/AGENT_CLAIM_CHECK must be on or off/);
    expect(() => createDataConverter(codecSettings({ AGENT_CLAIM_CHECK_THRESHOLD: '32k' }))).toThrow(/AGENT_CLAIM_CHECK_THRESHOLD must be a number of bytes/);
  });
});

describe('agentRun on the real server', () => {
  type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

  const FILES = 6;
  const FILE_BYTES = 40 * 1024;
  const READ_SCRIPT = 'read-big-files';
  /** Each file starts with a marker; readFile returns the first 20,000 characters, marker included. */
  const marker = (i: number) => `MARKER-${i}-${randomUUID()}`;
  const markers = Array.from({ length: FILES }, (_, i) => marker(i));
  /** The body after the marker line: unlike the marker it never reaches the answer, only tool results and model inputs. */
  const bodies = markers.map(() => randomBytes(FILE_BYTES).toString('base64').slice(0, FILE_BYTES - 80));
  const bodyProbe = (i: number) => bodies[i].slice(0, 64);
  const files: Record<string, string> = { 'hello.txt': 'Hello from the workspace\n' };
  markers.forEach((m, i) => (files[`big-${i}.txt`] = `${m}\n${bodies[i]}`));

  let env: TestWorkflowEnvironment;
  /** Reads history as the server stores it: no codec. */
  let raw: Client;
  let model: ScriptedModel;
  let blobDir: string;
  const workers: { worker: Worker; running: Promise<void> }[] = [];

  /** A worker of its own task queue with the given data converter; returns the task queue. */
  async function startWorker(dataConverter: DataConverter | undefined, workspace: string): Promise<string> {
    const taskQueue = `codec-${randomUUID()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      dataConverter,
      ...agentWorkerOptions({ openai: openAIClient({ baseURL: model.url, apiKey: 'scripted' }), defaultModel: 'unset', workspace }),
    });
    workers.push({ worker, running: worker.run() });
    return taskQueue;
  }

  let withCodec: string;
  let lowThreshold: string;
  let withoutCodec: string;
  let dataConverter: DataConverter;
  let lowDataConverter: DataConverter;

  beforeAll(async () => {
    quietRuntime();
    const workspace = tempDir('agent-ws-');
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(workspace, name), content);
    blobDir = tempDir('blobs-');
    dataConverter = claimCheckDataConverter({ store: new FsBlobStore(blobDir) });
    lowDataConverter = claimCheckDataConverter({ store: new FsBlobStore(blobDir), thresholdBytes: 4 * 1024 });
    model = await startScriptedModel();
    env = await TestWorkflowEnvironment.createFromExistingServer({ address: testServerAddress(), client: { dataConverter }, plugins: [closeSafeConnectionPlugin] });
    raw = new Client({ connection: env.connection, namespace: env.namespace });
    withCodec = await startWorker(dataConverter, workspace);
    lowThreshold = await startWorker(lowDataConverter, workspace);
    withoutCodec = await startWorker(undefined, workspace);

    // One big file per call, a different one each time so the loop guard stays quiet, then an answer built from
    // the markers the model saw: right only if every tool result reached it whole through the blob store.
    model.register(READ_SCRIPT, ({ request }) => {
      const seen: string[] = request.messages.filter((m: any) => m.role === 'tool').map((m: any) => String(m.content).split('\n')[0]);
      if (seen.length < FILES) return { toolCalls: [{ name: 'readFile', arguments: { path: `big-${seen.length}.txt` } }] };
      return { text: `markers: ${seen.join(',')}` };
    });
    model.register('read-small', ({ callIndex }) =>
      callIndex === 0 ? { toolCalls: [{ name: 'readFile', arguments: { path: 'hello.txt' } }] } : { text: 'It says hello.' },
    );
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) w.worker.shutdown();
    await Promise.all(workers.map((w) => w.running));
    await env?.teardown();
    await model?.close();
  });

  /** Runs to completion through the codec-aware client (`client`, default the test env's); returns result and raw history. */
  async function run(taskQueue: string, input: AgentRunInput, client: Client = env.client) {
    const handle = await client.workflow.start(WORKFLOW_TYPE, { taskQueue, workflowId: `codec-${randomUUID()}`, args: [input] });
    const result = (await handle.result()) as AgentRunResult;
    const history = await raw.workflow.getHandle(handle.workflowId).fetchHistory();
    return { handle, result, history, events: history.events ?? [] };
  }

  const eventBytes = (e: HistoryEvent) => Buffer.from(temporal.api.history.v1.HistoryEvent.encode(e).finish());
  const historyBytes = (events: HistoryEvent[]) => Buffer.concat(events.map(eventBytes));
  const isModelCall = (e: HistoryEvent) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel';
  const eventsHolding = (events: HistoryEvent[], text: string) => events.filter((e) => eventBytes(e).includes(text)).length;

  /** History bytes from each model call's scheduled event to the next one's: what one agent step adds. */
  function bytesPerStep(events: HistoryEvent[]): number[] {
    const starts = events.flatMap((e, i) => (isModelCall(e) ? [i] : []));
    return starts.slice(0, -1).map((start, k) => historyBytes(events.slice(start, starts[k + 1])).length);
  }

  /** The size of each model call's input as the conversation grew: the reference's `claim-check-size`, or inline. */
  function modelInputSizes(events: HistoryEvent[]): { size: number; reference: boolean }[] {
    return events.filter(isModelCall).map((e) => {
      const payload = e.activityTaskScheduledEventAttributes!.input!.payloads![0] as Payload;
      const reference = isClaimCheckReference(payload);
      return { reference, size: reference ? Number(Buffer.from(payload.metadata!['claim-check-size']!).toString()) : payloadSize(payload) };
    });
  }

  const expectedAnswer = `markers: ${markers.join(',')}`;
  const bigRun: AgentRunInput = { prompt: 'Read the big files one by one, then list their first lines.', model: READ_SCRIPT };

  test('large conversations leave history as references, and each step adds a flat number of bytes', async () => {
    const before = filesUnder(blobDir).length;
    const { handle, result, history, events } = await run(withCodec, bigRun);
    expect(result).toMatchObject({ status: 'COMPLETED', answer: expectedAnswer, toolCalls: FILES, loops: FILES + 1 });

    const all = historyBytes(events);
    expect(all.includes(CLAIM_CHECK_ENCODING)).toBe(true);
    const inputs = modelInputSizes(events);
    // Inline while the conversation is under the threshold, references once it is over.
    for (const input of inputs) expect(input.reference).toBe(input.size > 32 * 1024);
    expect(inputs.filter((i) => i.reference).length).toBeGreaterThanOrEqual(FILES - 2);
    // A file's content is in history in its own tool result (20,000 characters) and again only in model inputs still
    // under the threshold, never in the claim-checked ones; no 40 KB file is in history whole. (The run's stored state,
    // written to its memo at the end, also holds the first 200 characters of each recent tool output.)
    const outsideMemo = events.filter((e) => !e.workflowPropertiesModifiedEventAttributes);
    for (let i = 0; i < FILES; i++) {
      const inlineLater = inputs.slice(i + 1).filter((input) => !input.reference).length;
      expect(eventsHolding(outsideMemo, bodyProbe(i))).toBe(1 + inlineLater);
      expect(all.includes(files[`big-${i}.txt`])).toBe(false);
    }
    expect(filesUnder(blobDir).length).toBeGreaterThan(before);

    const steps = bytesPerStep(events);
    const baseline = await run(withoutCodec, bigRun, raw);
    expect(baseline.result.answer).toBe(expectedAnswer);
    // Without the codec every later model call carries each file again.
    const baselineOutsideMemo = baseline.events.filter((e) => !e.workflowPropertiesModifiedEventAttributes);
    for (let i = 0; i < FILES; i++) expect(eventsHolding(baselineOutsideMemo, bodyProbe(i))).toBe(1 + FILES - i);
    const baseSteps = bytesPerStep(baseline.events);
    const lowSteps = bytesPerStep((await run(lowThreshold, bigRun)).events);
    console.log(
      [
        'history bytes added per agent step (model call to model call), each step reads one 40 KB file:',
        'step  conversation  claim-check 32K  claim-check 4K  no codec',
        ...steps.map((b, k) =>
          [String(k + 1).padEnd(4), String(inputs[k].size).padStart(12), String(b).padStart(15), String(lowSteps[k]).padStart(14), String(baseSteps[k]).padStart(9)].join('  '),
        ),
        `total history bytes: claim-check ${all.length}, no codec ${historyBytes(baseline.events).length}`,
      ].join('\n'),
    );

    // Flat: once the conversation is claim-checked, every step adds the same bytes within 1 KB (the tool result
    // inline plus small references); without the codec each step adds the whole conversation again.
    const flat = steps.filter((_, k) => inputs[k].reference);
    expect(Math.max(...flat) - Math.min(...flat)).toBeLessThan(1024);
    for (const b of steps) expect(b).toBeLessThan(20_000 + 32 * 1024 + 8 * 1024);
    for (let k = 1; k < baseSteps.length; k++) expect(baseSteps[k] - baseSteps[k - 1]).toBeGreaterThan(15_000);
    expect(baseSteps.at(-1)!).toBeGreaterThan(2 * steps.at(-1)!);

    // A big state view travels through the codec too, and replay from the references works.
    const view = await handle.query(stateQuery, { includeMessages: true });
    expect(view.messages?.filter((m) => m.role === 'tool').map((m) => String(m.content).split('\n')[0])).toEqual(markers);
    await expect(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle(), dataConverter, sinks: streamSinks(undefined) }, history, handle.workflowId),
    ).resolves.toBeUndefined();
  });

  test('with a threshold below the tool output, no file content is in history at all', async () => {
    const client = new Client({ connection: env.connection, namespace: env.namespace, dataConverter: lowDataConverter });
    const { result, events } = await run(lowThreshold, bigRun, client);
    expect(result.answer).toBe(expectedAnswer);
    for (let i = 0; i < FILES; i++) expect(eventsHolding(events, bodyProbe(i))).toBe(0);
    const steps = bytesPerStep(events);
    expect(Math.max(...steps)).toBeLessThan(8 * 1024);
    expect(Math.max(...steps) - Math.min(...steps)).toBeLessThan(1024);
  });

  test('a run with only small payloads has no claim-check references and stores no blob', async () => {
    const before = filesUnder(blobDir);
    const { result, events } = await run(withCodec, { prompt: 'What does hello.txt say?', model: 'read-small' });
    expect(result).toMatchObject({ status: 'COMPLETED', answer: 'It says hello.' });
    const all = historyBytes(events);
    expect(all.includes(CLAIM_CHECK_ENCODING)).toBe(false);
    expect(all.includes('Hello from the workspace')).toBe(true);
    expect(filesUnder(blobDir)).toEqual(before);
  });
});
