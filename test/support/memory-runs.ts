/**
 * Memory across runs end to end on the real dev server, the same on each backend (memory-runs.test.ts: SQLite;
 * memory-postgres.test.ts: PostgreSQL): a run's `remember` is found by a later run's `recall`, a retried write writes
 * once, and memories follow the run's tenant and namespace.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { RetryableToolError } from '../../src/activities';
import type { MemoryStore } from '../../src/memory';
import { startAgentHarness, type AgentHarness } from './agent-harness';

/** The store with a fault: the first write of a key in `failAfterWrite` is done, then its attempt fails as retryable. */
function withFaultAfterWrite(store: MemoryStore, failAfterWrite: Set<string>): MemoryStore {
  return {
    get: (scope, key) => store.get(scope, key),
    list: (scope, query) => store.list(scope, query),
    delete: (scope, key, options) => store.delete(scope, key, options),
    search: (scope, query) => store.search(scope, query),
    close: () => store.close(),
    async put(scope, key, write) {
      const written = await store.put(scope, key, write);
      if (failAfterWrite.delete(key)) throw new RetryableToolError('the worker lost its connection right after the write');
      return written;
    },
  };
}

export function memoryRunsSuite(open: () => MemoryStore): void {
  let h: AgentHarness;
  let store: MemoryStore;
  const failAfterWrite = new Set<string>();
  const suffix = Date.now().toString(36);
  beforeAll(async () => {
    store = open();
    h = await startAgentHarness(undefined, { memory: withFaultAfterWrite(store, failAfterWrite) });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await store?.close();
  });

  const resultOf = (handle: WorkflowHandle) => handle.result() as Promise<{ status: string; answer: string }>;
  /** What the run's model was told by its tool calls, in order. */
  const toolResults = (script: string) =>
    h.model
      .requests(script)
      .flatMap((r) => (r.body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'tool').map((m) => m.content))
      .filter((c, i, all) => all.indexOf(c) === i);
  /** The tools the model was offered in its first request. */
  const offered = (script: string) => ((h.model.requests(script)[0]!.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);

  test("a run's remember is found by a later run's recall, in the same namespace; the tools are offered only when named", async () => {
    const namespace = `user-${suffix}`;
    h.model.register(`remember-${suffix}`, [{ toolCalls: [{ name: 'remember', arguments: { key: 'drink', text: 'The user drinks oat-milk flat whites' } }] }, { text: 'Noted.' }]);
    const first = await h.start({ prompt: 'I always drink oat-milk flat whites', model: `remember-${suffix}`, tools: ['remember', 'recall'], memory: { namespace } });
    expect(await resultOf(first)).toMatchObject({ status: 'COMPLETED', answer: 'Noted.' });
    expect(offered(`remember-${suffix}`)).toEqual(['remember', 'recall']);
    expect(toolResults(`remember-${suffix}`)).toEqual(['remembered under "drink"']);

    h.model.register(`recall-${suffix}`, [{ toolCalls: [{ name: 'recall', arguments: { query: 'what does the user drink' } }] }, { text: 'An oat-milk flat white.' }]);
    const second = await h.start({ prompt: 'Order my usual coffee', model: `recall-${suffix}`, tools: ['recall'], memory: { namespace } });
    expect(await resultOf(second)).toMatchObject({ status: 'COMPLETED' });
    expect(toolResults(`recall-${suffix}`)).toEqual(['- drink: The user drinks oat-milk flat whites']);

    // Another namespace holds nothing of it; a run that names no tools is offered neither tool.
    h.model.register(`elsewhere-${suffix}`, [{ toolCalls: [{ name: 'recall', arguments: { query: 'drink' } }] }, { text: 'Nothing known.' }]);
    await resultOf(await h.start({ prompt: 'Order my usual', model: `elsewhere-${suffix}`, tools: ['recall'], memory: { namespace: `other-${suffix}` } }));
    expect(toolResults(`elsewhere-${suffix}`)).toEqual(['No memories match.']);
    h.model.register(`plain-${suffix}`, [{ text: 'hello' }]);
    await resultOf(await h.start({ prompt: 'hi', model: `plain-${suffix}` }));
    expect(offered(`plain-${suffix}`)).not.toEqual(expect.arrayContaining(['remember']));
    expect(offered(`plain-${suffix}`)).toEqual(['listFiles', 'readFile', 'writeFile']);
  });

  test('an attempt that fails right after its write is retried, and the retry writes nothing again', async () => {
    const namespace = `retry-${suffix}`;
    failAfterWrite.add('flaky');
    h.model.register(`flaky-${suffix}`, [{ toolCalls: [{ name: 'remember', arguments: { key: 'flaky', text: 'Meets on Tuesdays' } }] }, { text: 'Saved.' }]);
    const handle = await h.start({ prompt: 'Remember our meeting day', model: `flaky-${suffix}`, tools: ['remember'], memory: { namespace } });
    expect(await resultOf(handle)).toMatchObject({ status: 'COMPLETED' });
    expect(failAfterWrite.has('flaky')).toBe(false); // the fault fired
    const attempts = ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
    expect(attempts).toContain(2);
    expect(await store.get({ namespace }, 'flaky')).toMatchObject({ text: 'Meets on Tuesdays', version: 1 });
    expect(toolResults(`flaky-${suffix}`)).toEqual(['remembered under "flaky"']);
  });

  test("memories follow the run's tenant: another tenant's run with the same namespace recalls nothing", async () => {
    const namespace = `shared-${suffix}`;
    h.model.register(`acme-${suffix}`, [{ toolCalls: [{ name: 'remember', arguments: { key: 'plan', text: 'Launch the rocket in May' } }] }, { text: 'ok' }]);
    await resultOf(await h.start({ prompt: 'remember the plan', model: `acme-${suffix}`, tools: ['remember'], memory: { namespace }, tenant: 'acme' }));
    expect((await store.get({ namespace, tenant: 'acme' }, 'plan'))?.text).toBe('Launch the rocket in May');
    expect(await store.get({ namespace }, 'plan')).toBeNull();
    h.model.register(`globex-${suffix}`, [{ toolCalls: [{ name: 'recall', arguments: { query: 'rocket launch plan' } }] }, { text: 'no idea' }]);
    await resultOf(await h.start({ prompt: 'what is the plan', model: `globex-${suffix}`, tools: ['recall'], memory: { namespace }, tenant: 'globex' }));
    expect(toolResults(`globex-${suffix}`)).toEqual(['No memories match.']);
  });
}
