/**
 * Issue 49: streamed text reaches watchers over the channel (or the call's heartbeats), never through history. An
 * answer streamed for 10 s and one streamed for 60 s add the same number of history events.
 */
import { startAgentHarness, type AgentHarness } from './support/agent-harness';

let h: AgentHarness;

beforeAll(async () => {
  h = await startAgentHarness();
}, 120_000);

afterAll(async () => {
  await h?.close();
});

test('an answer streamed for 10 s and one streamed for 60 s add the same number of history events', async () => {
  // 100 ms between chunks of 2 characters: 100 chunks are 10 s, 600 are 60 s.
  h.model.register('ten-seconds', [{ text: 'a'.repeat(200), chunkSize: 2, chunkDelayMs: 100 }]);
  h.model.register('sixty-seconds', [{ text: 'b'.repeat(1_200), chunkSize: 2, chunkDelayMs: 100 }]);
  const [short, long] = await Promise.all([h.start({ prompt: 'Ten seconds', model: 'ten-seconds' }), h.start({ prompt: 'Sixty seconds', model: 'sixty-seconds' })]);
  const [a, b] = await Promise.all([short.result(), long.result()]);
  expect(a).toMatchObject({ status: 'COMPLETED', answer: 'a'.repeat(200) });
  expect(b).toMatchObject({ status: 'COMPLETED', answer: 'b'.repeat(1_200) });
  const types = async (run: typeof short) => ((await run.fetchHistory()).events ?? []).map((e) => e.eventType);
  const [shortEvents, longEvents] = await Promise.all([types(short), types(long)]);
  expect(longEvents).toEqual(shortEvents);
  expect(shortEvents.length).toBeLessThan(20);
}, 120_000);
