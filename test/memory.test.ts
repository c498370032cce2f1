/**
 * Memory across runs without a server: the SQLite store against the stores' contract, the `remember` and `recall`
 * tools (opt-in, scoped by the run, idempotent), `AgentClient.memory` (AgentMemory) and `agent memory`.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ToolRegistry } from '../src/activities';
import { memoryTools } from '../src/activities/tools/memory';
import { AgentMemory, InvalidAgentInputError } from '../src/client';
import { runCli } from '../src/cli/cli';
import { memorySettings } from '../src/config';
import { SqliteMemoryStore } from '../src/memory/sqlite';
import { memoryStoreContract } from './support/memory-contract';

const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-memory-'));

describe('SqliteMemoryStore', () => {
  memoryStoreContract(() => new SqliteMemoryStore(path.join(dir, 'contract.sqlite')));

  test('memories outlive the store that wrote them: another store on the file reads them', async () => {
    const file = path.join(dir, 'reopen.sqlite');
    const a = new SqliteMemoryStore(file);
    await a.put({ namespace: 'u1' }, 'k', { text: 'kept' });
    await a.close();
    const b = new SqliteMemoryStore(file);
    expect((await b.get({ namespace: 'u1' }, 'k'))?.text).toBe('kept');
    await b.close();
  });
});

describe('remember and recall', () => {
  const store = new SqliteMemoryStore(path.join(dir, 'tools.sqlite'));
  const registry = new ToolRegistry(memoryTools(store));
  afterAll(() => store.close());
  const call = (name: string, args: unknown, id = 'c1') => ({ id, name, arguments: JSON.stringify(args) });
  const ctx = (idempotencyKey: string, memory?: { namespace?: string; tenant?: string }) => ({ idempotencyKey, signal: new AbortController().signal, ...(memory ? { memory } : {}) });

  test('are offered only to runs that name them', () => {
    expect(registry.definitions()).toEqual([]);
    expect(registry.definitions(['remember', 'recall']).map((d) => d.function.name)).toEqual(['remember', 'recall']);
  });

  test('a run that does not name them cannot call them', async () => {
    const result = await registry.run(call('remember', { text: 'x' }), ctx('wf/1/c1'));
    expect(result).toMatchObject({ ok: false, content: expect.stringMatching(/unknown tool "remember"/) });
  });

  test("remember writes in the run's namespace and tenant; recall finds it there and nowhere else", async () => {
    const scope = { namespace: 'user-7', tenant: 'acme' };
    const saved = await registry.run(call('remember', { text: 'Prefers window seats on trains', key: 'seating' }), ctx('wf-a/1/c1', scope), ['remember', 'recall']);
    expect(saved).toMatchObject({ ok: true, content: 'remembered under "seating"' });
    expect((await store.get(scope, 'seating'))?.text).toBe('Prefers window seats on trains');
    const found = await registry.run(call('recall', { query: 'train seats' }), ctx('wf-b/1/c1', scope), ['recall']);
    expect(found).toMatchObject({ ok: true, content: '- seating: Prefers window seats on trains' });
    const elsewhere = await registry.run(call('recall', { query: 'train seats' }), ctx('wf-c/1/c1', { namespace: 'user-7', tenant: 'globex' }), ['recall']);
    expect(elsewhere.content).toBe('No memories match.');
    const noScope = await registry.run(call('recall', { query: 'train seats' }), ctx('wf-d/1/c1'), ['recall']);
    expect(noScope.content).toBe('No memories match.');
  });

  test('a remember without a key gets one from its call, the same on every attempt: a retry writes nothing more', async () => {
    const scope = { namespace: 'user-8' };
    const first = await registry.run(call('remember', { text: 'Allergic to peanuts' }), ctx('wf-e/3/c9', scope), ['remember']);
    const again = await registry.run(call('remember', { text: 'Allergic to peanuts' }), ctx('wf-e/3/c9', scope), ['remember']);
    expect(again).toEqual(first);
    const { memories } = await store.list(scope);
    expect(memories).toHaveLength(1);
    expect(memories[0]).toMatchObject({ text: 'Allergic to peanuts', version: 1, key: expect.stringMatching(/^m-[0-9a-f]{16}$/) });
  });
});

describe('AgentMemory (AgentClient.memory)', () => {
  const memory = new AgentMemory({ kind: 'sqlite', file: path.join(dir, 'client.sqlite') });
  afterAll(() => memory.close());

  test('put, get, list, search and delete by namespace and tenant', async () => {
    await memory.put('team-1', 'standup', { text: 'Standup is at 9:30 on weekdays' }, { tenant: 'acme' });
    expect((await memory.get('team-1', 'standup', { tenant: 'acme' }))?.text).toBe('Standup is at 9:30 on weekdays');
    expect(await memory.get('team-1', 'standup')).toBeNull();
    expect((await memory.list('team-1', { tenant: 'acme' })).memories.map((m) => m.key)).toEqual(['standup']);
    expect((await memory.search('team-1', { query: 'standup time', tenant: 'acme' }))[0]).toMatchObject({ key: 'standup' });
    expect(await memory.delete('team-1', 'standup', { tenant: 'acme' })).toBe(true);
    expect(await memory.get('team-1', 'standup', { tenant: 'acme' })).toBeNull();
  });

  test('bad input is an InvalidAgentInputError naming the field, before the store is asked', async () => {
    await expect(memory.put('team 1', 'k', { text: 'x' })).rejects.toThrow(InvalidAgentInputError);
    await expect(memory.put('team-1', 'k', { text: 'x', extra: 1 } as never)).rejects.toThrow(/Invalid memory: \(input\): Unrecognized key: "extra"/);
    await expect(memory.list('team-1', { limit: 1000 })).rejects.toThrow(/limit/);
    await expect(memory.search('team-1', { query: ' ' })).rejects.toThrow(/query: must be a non-empty string/);
  });
});

test('AGENT_MEMORY: a postgres:// URL, else a SQLite file; another URL is refused', () => {
  expect(memorySettings({})).toEqual({ kind: 'sqlite', file: path.resolve('.agent/memory.sqlite') });
  expect(memorySettings({ AGENT_MEMORY: '/var/lib/agent/memory.db' })).toEqual({ kind: 'sqlite', file: '/var/lib/agent/memory.db' });
  expect(memorySettings({ AGENT_MEMORY: 'postgresql://u:p@db:5432/agent' })).toEqual({ kind: 'postgres', url: 'postgresql://u:p@db:5432/agent' });
  expect(() => memorySettings({ AGENT_MEMORY: 'mysql://db/agent' })).toThrow(/AGENT_MEMORY must be a postgres:\/\/ URL or the path of a SQLite file, got a mysql: URL/);
});

describe('agent memory', () => {
  const file = path.join(dir, 'cli.sqlite');
  async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = '';
    let err = '';
    const code = await runCli(['memory', ...argv], {
      memory: () => new AgentMemory({ kind: 'sqlite', file }),
      connect: () => Promise.reject(new Error('agent memory needs no Temporal')),
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err };
  }

  test('put, get, list, search, delete; --tenant keeps tenants apart; --json prints the shapes', async () => {
    expect(await cli('put', 'u1', 'lang', 'Speaks Portuguese and English', '--metadata', '{"source":"cli"}')).toMatchObject({ code: 0, out: 'u1/lang: version 1\n' });
    expect(await cli('get', 'u1', 'lang')).toMatchObject({ code: 0, out: 'Speaks Portuguese and English\n' });
    expect(JSON.parse((await cli('get', 'u1', 'lang', '--json')).out)).toMatchObject({ key: 'lang', metadata: { source: 'cli' }, version: 1 });
    expect((await cli('list', 'u1')).out).toBe('lang\tSpeaks Portuguese and English\n');
    expect((await cli('search', 'u1', 'portuguese', '--json')).out).toMatch(/"hits":\[\{"namespace":"u1","key":"lang"/);
    expect(await cli('get', 'u1', 'lang', '--tenant', 'acme')).toMatchObject({ code: 1, err: 'error: no memory lang in namespace u1\n' });
    expect(await cli('delete', 'u1', 'lang')).toMatchObject({ code: 0, out: 'deleted u1/lang\n' });
    expect(await cli('delete', 'u1', 'lang')).toMatchObject({ code: 1, out: 'no memory lang in namespace u1\n' });
    expect((await cli('list', 'u1')).out).toBe('(no memories)\n');
  });

  test('a bad name is refused with what is wrong', async () => {
    const { code, err } = await cli('put', 'u 1', 'k', 'text');
    expect(code).toBe(1);
    expect(err).toMatch(/Invalid memory namespace: \(input\): must be 1-128 characters/);
  });
});
