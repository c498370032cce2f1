/**
 * API keys that a provider refused cool down for the fleet when it has a Redis (the quota's), and every model request
 * rotates keys: the critic and compaction as the main call does (issue 46, seed 001 §4.4). Through the client, on
 * the real dev server, the scripted model (which sees each request's key) and a real redis-server.
 */
import type { ChildProcess } from 'node:child_process';
import { AgentClient } from '../src/client';
import { RedisKeyCooldowns } from '../src/quota/redis-cooldowns';
import type { ScriptContext, ScriptStep } from '../src/scripted-model/types';
import { startAgentHarness, type AgentHarness } from './support/agent-harness';
import { freePort, startRedis } from './support/redis';

const system = (request: ScriptContext['request']) => String(request.messages?.[0]?.content ?? '');
const refused: ScriptStep = { error: { status: 401, message: 'Incorrect API key provided', code: 'invalid_api_key' } };

describe('the critic and compaction rotate keys', () => {
  let h: AgentHarness;
  let agents: AgentClient;
  beforeAll(async () => {
    h = await startAgentHarness(undefined, { providers: { keys: ['side-refused', 'good'] } });
    agents = new AgentClient(h.env.client, h.taskQueue);
  }, 120_000);
  afterAll(async () => h?.close());

  test("a critic whose first key is refused asks with the next, and its verdict decides", async () => {
    h.model.register('critic-keys', ({ request, apiKey }: ScriptContext): ScriptStep => {
      if (!system(request).startsWith('You review')) return { text: 'Paris.' };
      return apiKey === 'side-refused' ? refused : { text: JSON.stringify({ action: 'complete', reason: 'heard on the second key', confidence: 90 }) };
    });
    const run = await agents.start({ prompt: 'Capital of France?', model: 'critic-keys', critique: 'model' });
    expect((await run.result()).answer).toBe('Paris.');
    expect((await run.state()).lastCritique).toEqual({ action: 'complete', reason: 'heard on the second key', confidence: 90 });
    const criticKeys = h.model.requests('critic-keys').filter((r) => system(r.body).startsWith('You review')).map((r) => r.apiKey);
    expect(criticKeys).toEqual(['side-refused', 'good']);
  });

  test('a compaction whose first key is refused summarises with the next', async () => {
    h.model.register('compaction-keys', ({ request, apiKey }: ScriptContext): ScriptStep => {
      if (system(request).startsWith('You summarise')) return apiKey === 'side-refused' ? refused : { text: 'summary' };
      const summarised = (request.messages as Array<{ content: string }>).some((m) => String(m.content).startsWith('Summary of the earlier conversation:'));
      return summarised ? { text: 'after compaction' } : { error: { status: 400, message: 'This model maximum context length is 10 tokens', code: 'context_length_exceeded' } };
    });
    const messages = [{ role: 'user' as const, content: 'earlier question' }, { role: 'assistant' as const, content: 'earlier answer' }];
    const run = await agents.start({ prompt: 'Go on', messages, model: 'compaction-keys' });
    expect((await run.result()).answer).toBe('after compaction');
  });
});

describe("cooldowns in the fleet's Redis", () => {
  let redis: ChildProcess;
  let url: string;
  beforeAll(async () => {
    const port = await freePort();
    redis = await startRedis(port);
    url = `redis://127.0.0.1:${port}`;
  }, 30_000);
  afterAll(() => void redis?.kill());

  test('a key one worker found refused is skipped by the next worker (a restart, another process), until its cooldown ends', async () => {
    const script = ({ apiKey }: ScriptContext): ScriptStep => (apiKey === 'revoked' ? refused : { text: 'ok' });
    const first = await RedisKeyCooldowns.connect({ url });
    const a = await startAgentHarness(undefined, { providers: { keys: ['revoked', 'good'], cooldowns: first } });
    a.model.register('keys', script);
    await (await new AgentClient(a.env.client, a.taskQueue).start({ prompt: 'hi', model: 'keys' })).result();
    expect(a.model.requests('keys').map((r) => r.apiKey)).toEqual(['revoked', 'good']);
    await a.close();
    await first.close();

    // Another worker with its own providers, and the same Redis: it starts with the key that works.
    const second = await RedisKeyCooldowns.connect({ url });
    const b = await startAgentHarness(undefined, { providers: { keys: ['revoked', 'good'], cooldowns: second } });
    try {
      b.model.register('keys', script);
      await (await new AgentClient(b.env.client, b.taskQueue).start({ prompt: 'hi', model: 'keys' })).result();
      expect(b.model.requests('keys').map((r) => r.apiKey)).toEqual(['good']);
    } finally {
      await b.close();
      await second.close();
    }
  }, 120_000);
});
