/**
 * The model call's request body (src/activities/wire.ts): the messages of a chained conversation are encoded once and
 * reused by the next call, the body is the document the `openai` client would have sent, and the worker's client
 * follows no redirect.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../src/activities';
import { chatRequestBody, encodeMessages } from '../src/activities/wire';
import { toOpenAI as toOpenAIMessages } from '../src/common/conversation';
import { ConversationStore, FsBlobStore } from '../src/codec';
import type { ChatMessage, ModelRequest, ModelResponse, QuotaWait } from '../src/common/chat';
import { isQuotaWait } from '../src/common/chat-helpers';
import { ModelErrorType } from '../src/common/failures';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { openAIClient } from '../src/worker';
import { QuietLogger } from './support/quiet-logger';

const quiet = { logger: new QuietLogger() };

/** Every kind of message, with content that is not ASCII and content that JSON must escape. */
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Lies „a.txt“ 📄 and say "done"\n' },
  { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'readFile', arguments: '{"path":"a.txt"}' }] },
  { role: 'tool', toolCallId: 'c1', content: 'alpha\tbeta \u2028 gamma' },
  { role: 'assistant', content: 'done' },
  { role: 'user', content: 'again' },
];

/** What `JSON.stringify` writes for the messages inside the request's array. */
const plainJson = (messages: ChatMessage[]) => JSON.stringify(toOpenAIMessages(messages)).slice(1, -1);

describe('encodeMessages', () => {
  test('writes the JSON the whole array would have, whether it goes on from a base or not', () => {
    const base = conversation.slice(0, 4);
    expect(encodeMessages(base).toString()).toBe(plainJson(base));
    const all = base.concat(conversation.slice(4));
    expect(encodeMessages(all, base).toString()).toBe(plainJson(conversation));
    // A base never encoded, an empty one, and a call that adds nothing.
    const cold = conversation.slice(0, 3);
    expect(encodeMessages(cold.concat(conversation.slice(3)), cold).toString()).toBe(plainJson(conversation));
    const empty: ChatMessage[] = [];
    expect(encodeMessages(empty).toString()).toBe('');
    expect(encodeMessages(empty.concat(conversation), empty).toString()).toBe(plainJson(conversation));
    expect(encodeMessages(base.concat([]), base).toString()).toBe(plainJson(base));
  });

  test('going on from an encoded base, it encodes only the messages added', () => {
    const base = conversation.slice(0, 2);
    encodeMessages(base);
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      const next = base.concat(conversation.slice(2, 4));
      encodeMessages(next, base);
      expect(stringify).toHaveBeenCalledTimes(2);
      encodeMessages(next.concat(conversation.slice(4)), next);
      expect(stringify).toHaveBeenCalledTimes(4);
      // Asked again, the same array is not encoded again.
      encodeMessages(next, base);
      expect(stringify).toHaveBeenCalledTimes(4);
    } finally {
      stringify.mockRestore();
    }
  });

  test('the body is the request `JSON.stringify` would write, the messages last', () => {
    const params = { model: 'm', tools: [{ type: 'function', function: { name: 'readFile', parameters: {} } }], stream: true, stream_options: { include_usage: true } };
    const body = chatRequestBody(params, encodeMessages(conversation));
    expect(JSON.parse(body.toString())).toEqual({ ...params, messages: toOpenAIMessages(conversation) });
    expect(Object.keys(JSON.parse(body.toString())).at(-1)).toBe('messages');
    expect(JSON.parse(chatRequestBody({}, encodeMessages([])).toString())).toEqual({ messages: [] });
  });
});

describe('callModel on a chained conversation', () => {
  let model: ScriptedModel;
  let dir: string;
  beforeAll(async () => {
    model = await startScriptedModel();
    dir = mkdtempSync(path.join(os.tmpdir(), 'wire-'));
  });
  afterAll(async () => {
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('each call sends the whole conversation, the base it reused included', async () => {
    const conversations = new ConversationStore(new FsBlobStore(dir));
    const activities = createActivities({ openai: openAIClient({ baseURL: model.url, apiKey: 'x' }), defaultModel: 'unset', workspace: dir, conversations });
    model.register('chained', [{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    const call = async (request: ModelRequest): Promise<ModelResponse> => {
      const r = await new MockActivityEnvironment(undefined, quiet).run<[ModelRequest], ModelResponse | QuotaWait, typeof activities.callModel>(activities.callModel, request);
      if (isQuotaWait(r)) throw new Error('no budget here');
      return r;
    };
    const first = await call({ purpose: 'respond', callNumber: 1, model: 'chained', messages: conversation.slice(0, 2), chain: {} });
    const added = (text: string, next: string): ChatMessage[] => [{ role: 'assistant', content: text }, { role: 'user', content: next }];
    const second = await call({ purpose: 'respond', callNumber: 2, model: 'chained', messages: added('one', 'más 🙂'), chain: { base: first.conversation! } });
    const third = await call({ purpose: 'respond', callNumber: 3, model: 'chained', messages: added('two', 'last'), chain: { base: second.conversation! } });
    // The store hands the next call the very conversation this one encoded: nothing of it is encoded again.
    const kept = await conversations.conversation(third.conversation!);
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      encodeMessages(kept.concat([]), kept);
      expect(stringify).not.toHaveBeenCalled();
    } finally {
      stringify.mockRestore();
    }
    const sent = model.requests('chained').map((r) => (r.body as { messages: unknown[] }).messages);
    expect(sent).toEqual([
      toOpenAIMessages(conversation.slice(0, 2)),
      toOpenAIMessages([...conversation.slice(0, 2), ...added('one', 'más 🙂')]),
      toOpenAIMessages([...conversation.slice(0, 2), ...added('one', 'más 🙂'), ...added('two', 'last')]),
    ]);
    expect(model.requests('chained').every((r) => (r.body as { stream?: boolean }).stream === true)).toBe(true);
  });
});

describe("the worker's provider client", () => {
  test('an abort closes the provider stream, a garbage collection after the request was sent notwithstanding', async () => {
    // undici lost the link from the signal to a request sent with redirect 'error' once its Request object was
    // collected (nodejs/undici#4627): the stream then went on after the abort, and an interrupted call kept streaming.
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const model = await startScriptedModel();
    try {
    model.register('abort-after-gc', () => ({ text: 'z'.repeat(4_000), chunkSize: 2, chunkDelayMs: 20 }));
    const openai = openAIClient({ baseURL: model.url, apiKey: 'scripted' });
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const stream = await openai.chat.completions.create({ model: 'abort-after-gc', messages: [{ role: 'user', content: 'go' }], stream: true }, { signal: controller.signal });
      let chunks = 0;
      const reading = (async () => {
        for await (const chunk of stream) chunks += chunk.choices.length > 0 ? 1 : 0;
        return 'ended';
      })();
      while (chunks < 3) await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
      controller.abort();
      const outcome = await Promise.race([reading.catch(() => 'ended'), new Promise((resolve) => setTimeout(() => resolve('still streaming'), 2_000))]);
      expect(outcome).toBe('ended');
      const request = () => model.requests('abort-after-gc')[i];
      for (let waited = 0; !request().closedByClient && waited < 2_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(request()).toMatchObject({ completed: false, closedByClient: true });
    }
    } finally {
      await model.close();
    }
  });

  test('does not follow a redirect: the call fails at once, not retried, saying why', async () => {
    let requests = 0;
    const server = http.createServer((req, res) => {
      requests++;
      req.resume();
      res.writeHead(307, { location: 'https://elsewhere.example/v1/chat/completions' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const activities = createActivities({ openai: openAIClient({ baseURL: `http://127.0.0.1:${port}/v1` }), defaultModel: 'm', workspace: os.tmpdir() });
      const request: ModelRequest = { purpose: 'respond', callNumber: 1, messages: [{ role: 'user', content: 'hi' }] };
      const err = await new MockActivityEnvironment(undefined, quiet)
        .run<[ModelRequest], ModelResponse | QuotaWait, typeof activities.callModel>(activities.callModel, request)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err).toMatchObject({ type: ModelErrorType.NotFound, nonRetryable: true, message: expect.stringContaining('answered the model request with a redirect') });
      expect(requests).toBe(1);
    } finally {
      server.close();
    }
  });
});
