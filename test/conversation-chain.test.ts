/**
 * Conversation chains: the store (real files, real codecs) and the `conversation-chain` patch on the real dev server.
 * A model call sends the conversation the previous call stored and only the messages since; the model still gets
 * every message, and a worker that cannot read a chain back makes the call with everything.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { ConversationStore, ConversationUnavailableError, EncryptionCodec, FsBlobStore } from '../src/codec';
import type { ChatMessage, ConversationRef } from '../src/common/chat';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

const EventType = temporal.api.enums.v1.EventType;
const tempDir = () => mkdtempSync(path.join(os.tmpdir(), 'chain-'));
const filesUnder = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('ConversationStore', () => {
  test('a chain read back by a worker that never saw it gives the whole conversation', async () => {
    const dir = tempDir();
    const writer = new ConversationStore(new FsBlobStore(dir));
    const first = [user('one'), user('two')];
    const root = await writer.save(undefined, first, first);
    const second = [...first, user('three')];
    const child = await writer.save(root, [user('three')], second);
    expect(child.count).toBe(3);

    const reader = new ConversationStore(new FsBlobStore(dir)); // a restarted worker or another replica: nothing in memory
    await expect(reader.resolve(child, [user('four')])).resolves.toEqual([...second, user('four')]);
    await expect(reader.resolve(root, [])).resolves.toEqual(first);
    // Each node holds only its own messages: two nodes, not a growing copy of the conversation, appended to one pack.
    const [pack] = filesUnder(dir);
    expect(filesUnder(dir)).toEqual([pack]);
    const nodeText = (ref: ConversationRef) => {
      const [, offset, length] = /@(\d+)\+(\d+)$/.exec(ref.at!)!.map(Number);
      return readFileSync(pack).subarray(offset, offset + length).toString();
    };
    expect(nodeText(child)).toContain('"three"');
    expect(nodeText(child)).not.toContain('"one"');
    expect(statSync(pack).size).toBe(nodeText(root).length + nodeText(child).length);
  });

  test('a worker keeps one conversation per run in memory: a call that stores its own drops its base', async () => {
    const dir = tempDir();
    const store = new ConversationStore(new FsBlobStore(dir), { maxCached: 3 });
    const a0 = await store.save(undefined, [user('a')], [user('a')]);
    const b0 = await store.save(undefined, [user('b')], [user('b')]);
    const a1 = await store.save(a0, [user('a1')], [user('a'), user('a1')]);
    const b1 = await store.save(b0, [user('b1')], [user('b'), user('b1')]);
    for (const file of filesUnder(dir)) rmSync(file); // from here on only memory answers
    await expect(store.resolve(a1, [])).resolves.toEqual([user('a'), user('a1')]);
    await expect(store.resolve(b1, [])).resolves.toEqual([user('b'), user('b1')]);
    // Room for three, but the bases went when their runs moved on.
    await expect(store.resolve(b0, [])).rejects.toThrow(ConversationUnavailableError);
  });

  test('a run that starts afresh (after a compaction, or its next run of the chain) drops the conversation it had from memory', async () => {
    const dir = tempDir();
    const store = new ConversationStore(new FsBlobStore(dir), { maxCached: 10 });
    const before = await store.save(undefined, [user('long')], [user('long')], 'run-a');
    const other = await store.save(undefined, [user('b')], [user('b')], 'run-b');
    const compacted = await store.save(undefined, [user('summary')], [user('summary')], 'run-a');
    const alike = await store.save(undefined, [user('b')], [user('b')], 'run-c'); // the same node as run-b's
    for (const file of filesUnder(dir)) rmSync(file); // from here on only memory answers
    await expect(store.resolve(compacted, [])).resolves.toEqual([user('summary')]);
    await expect(store.resolve(other, [])).resolves.toEqual([user('b')]);
    await expect(store.resolve(alike, [])).resolves.toEqual([user('b')]);
    // Room for ten, but run-a's conversation before its compaction went when it started afresh.
    await expect(store.resolve(before, [])).rejects.toThrow(ConversationUnavailableError);
  });

  test('nodes are encoded with the data converter: encrypted at rest when encryption is on', async () => {
    const dir = tempDir();
    const codec = new EncryptionCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });
    const store = new ConversationStore(new FsBlobStore(dir), { dataConverter: { payloadCodecs: [codec] } });
    const secret = [user('the launch code is 0000-SECRET')];
    const ref = await store.save(undefined, secret, secret);

    const [file] = filesUnder(dir);
    expect(readFileSync(file).toString('latin1')).not.toContain('SECRET');
    const cold = new ConversationStore(new FsBlobStore(dir), { dataConverter: { payloadCodecs: [codec] } });
    await expect(cold.resolve(ref, [])).resolves.toEqual(secret);
    const withoutKey = new ConversationStore(new FsBlobStore(dir));
    await expect(withoutKey.resolve(ref, [])).rejects.toThrow();
  });

  test('nodes are appended to a pack without a flush to disk, and one a crash of the host cut off reads back as unavailable', async () => {
    const dir = tempDir();
    const blobs = new FsBlobStore(dir);
    const appended: string[] = [];
    const recording = { put: () => Promise.reject(new Error('not put')), get: (key: string, at?: string) => blobs.get(key, at), append: (key: string, bytes: Uint8Array) => (appended.push(key), blobs.append(key, bytes)) };
    const ref = await new ConversationStore(recording).save(undefined, [user('a')], [user('a')]);
    expect(appended).toEqual([ref.ref]);
    expect(ref.at).toMatch(/^packs\/.+\.pack@0\+\d+$/);
    // What ext4 can leave of a file written but not flushed when the power goes: its name, no bytes.
    const [pack] = filesUnder(dir);
    writeFileSync(pack, '');
    await expect(new ConversationStore(blobs).resolve(ref, [])).rejects.toThrow(new ConversationUnavailableError(`conversation ${ref.ref} is corrupt: its content hashes to ${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}`));
  });

  test('a store without append gets each node put as fresh and not durable, and one left empty reads back as unavailable', async () => {
    const dir = tempDir();
    const blobs = new FsBlobStore(dir);
    const puts: Array<{ fresh?: boolean; durable?: boolean } | undefined> = [];
    const recording = { put: (key: string, bytes: Uint8Array, options?: { fresh?: boolean; durable?: boolean }) => (puts.push(options), blobs.put(key, bytes, options)), get: (key: string) => blobs.get(key) };
    const ref = await new ConversationStore(recording).save(undefined, [user('a')], [user('a')]);
    expect(puts).toEqual([{ fresh: true, durable: false }]);
    // What ext4 can leave of a file renamed but not flushed when the power goes: its name, no bytes.
    const [file] = filesUnder(dir);
    writeFileSync(file, '');
    await expect(new ConversationStore(blobs).resolve(ref, [])).rejects.toThrow(new ConversationUnavailableError(`conversation ${ref.ref} is corrupt: its content hashes to ${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}`));
  });

  test('a missing, corrupt or miscounted chain is ConversationUnavailableError, naming the node', async () => {
    const dir = tempDir();
    const store = new ConversationStore(new FsBlobStore(dir), { maxCached: 0 });
    const ref = await store.save(undefined, [user('a')], [user('a')]);

    await expect(store.resolve({ ...ref, count: 2 }, [])).rejects.toThrow(`conversation ${ref.ref} holds 1 messages, not the 2 its reference says`);
    const [file] = filesUnder(dir);
    const bytes = readFileSync(file);
    bytes[bytes.length - 1] ^= 0xff;
    writeFileSync(file, bytes);
    await expect(store.resolve(ref, [])).rejects.toThrow(`conversation ${ref.ref} is corrupt`);
    rmSync(file);
    await expect(store.resolve(ref, [])).rejects.toThrow(ConversationUnavailableError);
    await expect(store.resolve(ref, [])).rejects.toThrow(`conversation ${ref.ref} is not in the blob store`);
  });
});

/** The callModel inputs a run scheduled, as the server stores them (inline: these runs stay under the claim check). */
async function modelInputs(h: AgentHarness, handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }): Promise<any[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel')
    .map((e) => JSON.parse(Buffer.from(e.activityTaskScheduledEventAttributes!.input!.payloads![0].data!).toString()));
}

const readSteps = (steps: number) => ({ callIndex }: { callIndex: number }) =>
  callIndex < steps ? { toolCalls: [{ name: 'writeFile', arguments: { path: `f${callIndex}.txt`, content: `step ${callIndex}` } }] } : { text: 'done' };

describe('a run with conversation chains', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await startAgentHarness();
  }, 120_000);
  afterAll(async () => h?.close());

  test('after the first call, each call sends the chain and only the new messages; the model gets them all', async () => {
    h.model.register('chain-steps', readSteps(4));
    const handle = await h.start({ prompt: 'Write four files', model: 'chain-steps' });
    await expect(handle.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'done', toolCalls: 4 });

    // The model saw the whole conversation every time: system and user, then an assistant and a tool message a step.
    const seen = h.model.requests('chain-steps').map((r) => r.body.messages.length);
    expect(seen).toEqual([2, 4, 6, 8, 10]);
    const inputs = await modelInputs(h, handle);
    expect(inputs.map((i) => i.messages.length)).toEqual([2, 2, 2, 2, 2]);
    expect(inputs[0].chain).toEqual({});
    expect(inputs.slice(1).map((i) => i.chain.base.count)).toEqual([2, 4, 6, 8]);
    // The worker's messages in order: what the model got at call 5 is the history's inputs, joined.
    expect(h.model.requests('chain-steps')[4].body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'wrote 6 bytes to f3.txt' });
  });
});

describe('a worker that cannot read a chain back', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await startAgentHarness(undefined, { conversationCache: 0 });
  }, 120_000);
  afterAll(async () => h?.close());

  test('the call fails with ConversationUnavailable once, is made again with every message, and the run completes', async () => {
    let wiped = false;
    h.model.register('wiped', ({ callIndex, request }) => {
      if (callIndex === 1 && !wiped) {
        // The blob store loses everything after the first call stored its conversation (a wiped volume).
        for (const file of filesUnder(h.blobDir)) rmSync(file);
        wiped = true;
      }
      return readSteps(2)({ callIndex }) as any;
    });
    const handle = await h.start({ prompt: 'Write two files', model: 'wiped' });
    await expect(handle.result()).resolves.toMatchObject({ status: 'COMPLETED', answer: 'done' });

    const events = (await handle.fetchHistory()).events ?? [];
    const failed = events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED).map((e) => e.activityTaskFailedEventAttributes?.failure);
    expect(failed.map((f) => [f?.cause?.applicationFailureInfo?.type ?? f?.applicationFailureInfo?.type])).toEqual([['ConversationUnavailable']]);
    const inputs = await modelInputs(h, handle);
    // The chained third call could not be read back, so it went again with all six messages and began a new chain.
    expect(inputs.map((i) => [i.messages.length, i.chain.base?.count ?? null])).toEqual([
      [2, null],
      [2, 2],
      [2, 4],
      [6, null],
    ]);
    expect(h.model.requests('wiped').map((r) => r.body.messages.length)).toEqual([2, 4, 6]);
  });
});
