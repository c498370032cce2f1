import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { DEMO_SCRIPT_NAME, startScriptedModel, textOf } from '../src/scripted-model';
import type { ScriptedModel } from '../src/scripted-model';

const user = (content: string): ChatCompletionMessageParam => ({ role: 'user', content });

const fsTools: ChatCompletionTool[] = ['listFiles', 'readFile', 'writeFile'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: {} } },
}));

async function waitFor(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (predicate()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return predicate();
}

/** Error the promise rejects with; fails the test when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

describe('scripted model', () => {
  let model: ScriptedModel;
  let client: OpenAI;

  beforeAll(async () => {
    model = await startScriptedModel();
    client = new OpenAI({ baseURL: model.url, apiKey: 'scripted', maxRetries: 0 });
  });

  afterAll(async () => {
    await model.close();
  });

  it('streams text in chunks of chunkSize, then finish_reason, then usage', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    model.register('stream-text', [{ text, chunkSize: 5 }]);
    const messages = [user('Tell me a sentence about a fox.')];

    const stream = await client.chat.completions.create({
      model: 'stream-text',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).filter((d) => d !== '');
    expect(deltas.join('')).toBe(text);
    expect(deltas).toHaveLength(Math.ceil(text.length / 5));
    expect(deltas.slice(0, -1).every((d) => d.length === 5)).toBe(true);

    const finish = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((f) => f !== null);
    expect(finish).toEqual(['stop']);

    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({
      prompt_tokens: Math.ceil(messages.map((m) => String(m.content)).join('').length / 4),
      completion_tokens: Math.ceil(text.length / 4),
      total_tokens: Math.ceil(messages.map((m) => String(m.content)).join('').length / 4) + Math.ceil(text.length / 4),
    });
    expect(model.requests('stream-text')).toEqual([
      expect.objectContaining({ stream: true, completed: true, closedByClient: false }),
    ]);
  });

  it('leaves usage out of a stream unless include_usage is asked for', async () => {
    model.register('no-usage', [{ text: 'hi', usage: { prompt_tokens: 3, completion_tokens: 1 } }]);
    const stream = await client.chat.completions.create({ model: 'no-usage', messages: [user('x')], stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.choices.length === 1 && !c.usage)).toBe(true);
  });

  it('streams tool calls that the client assembles', async () => {
    model.register('stream-tools', [
      {
        text: 'Looking.',
        toolCalls: [
          { name: 'listFiles', arguments: { path: '.' } },
          { id: 'call_custom', name: 'readFile', arguments: { path: 'README.md' } },
        ],
        usage: { prompt_tokens: 11, completion_tokens: 7 },
      },
    ]);

    const stream = client.chat.completions.stream({
      model: 'stream-tools',
      messages: [user('look around')],
      tools: fsTools,
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();

    const choice = final.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Looking.');
    const calls = (choice.message.tool_calls ?? []).map((c) => (c.type === 'function' ? c : undefined));
    expect(calls.map((c) => [c?.id, c?.function.name, c?.function.arguments])).toEqual([
      ['call_0_0', 'listFiles', '{"path":"."}'],
      ['call_custom', 'readFile', '{"path":"README.md"}'],
    ]);
    expect(final.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  it('splits tool arguments over two deltas and passes malformed arguments verbatim', async () => {
    const malformed = '{"path": "README.md"';
    model.register('malformed', [{ toolCalls: [{ name: 'readFile', arguments: malformed }] }, { toolCalls: [{ name: 'readFile', arguments: malformed }] }]);

    const stream = await client.chat.completions.create({ model: 'malformed', messages: [user('x')], tools: fsTools, stream: true });
    const pieces: string[] = [];
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (call.function?.arguments) pieces.push(call.function.arguments);
      }
    }
    expect(pieces).toHaveLength(2);
    expect(pieces.join('')).toBe(malformed);

    const plain = await client.chat.completions.create({ model: 'malformed', messages: [user('x')], tools: fsTools });
    const call = plain.choices[0].message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function.arguments).toBe(malformed);
  });

  it('answers a non-streaming tool call as a chat.completion', async () => {
    model.register('plain-tools', [{ toolCalls: [{ name: 'writeFile', arguments: { path: 'a.txt', content: 'hello' } }] }]);
    const { data, response } = await client.chat.completions
      .create({ model: 'plain-tools', messages: [user('write it')], tools: fsTools })
      .withResponse();

    expect(response.headers.get('x-scripted-model')).toBe('true');
    expect(data.object).toBe('chat.completion');
    expect(data.choices[0].finish_reason).toBe('tool_calls');
    expect(data.choices[0].message.content).toBeNull();
    expect(data.choices[0].message.tool_calls).toEqual([
      { id: 'call_0_0', type: 'function', function: { name: 'writeFile', arguments: '{"path":"a.txt","content":"hello"}' } },
    ]);
    expect(data.usage?.completion_tokens).toBe(Math.ceil('{"path":"a.txt","content":"hello"}'.length / 4));
    expect(model.requests('plain-tools')[0]).toMatchObject({ stream: false, completed: true, closedByClient: false });
  });

  it('fails loudly with a 500 when a step list runs out', async () => {
    model.register('one-step', [{ text: 'only once' }]);
    await client.chat.completions.create({ model: 'one-step', messages: [user('1')] });

    const err = await rejectionOf(client.chat.completions.create({ model: 'one-step', messages: [user('2')] }));
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(500);
    expect(err.message).toContain('scripted model "one-step" has no step for call #2');
    expect(model.requests('one-step').map((r) => r.completed)).toEqual([true, true]);
  });

  it('register replaces a script and resets its call count', async () => {
    model.register('replaced', [{ text: 'first' }]);
    await client.chat.completions.create({ model: 'replaced', messages: [user('1')] });
    model.register('replaced', [{ text: 'second' }]);
    const reply = await client.chat.completions.create({ model: 'replaced', messages: [user('2')] });
    expect(reply.choices[0].message.content).toBe('second');
  });

  it('passes the request and call index to a function script, and turns a throw into a 500', async () => {
    const seen: Array<[number, string]> = [];
    model.register('echo', ({ request, callIndex }) => {
      const last = request.messages.at(-1).content;
      if (last === 'boom') throw new Error('echo script refused "boom"');
      seen.push([callIndex, last]);
      return { text: `#${callIndex}: ${last}` };
    });

    const a = await client.chat.completions.create({ model: 'echo', messages: [user('alpha')] });
    const b = await client.chat.completions.create({ model: 'echo', messages: [user('beta')] });
    expect([a.choices[0].message.content, b.choices[0].message.content]).toEqual(['#0: alpha', '#1: beta']);
    expect(seen).toEqual([[0, 'alpha'], [1, 'beta']]);

    const err = await rejectionOf(client.chat.completions.create({ model: 'echo', messages: [user('boom')] }));
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.message).toContain('echo script refused "boom"');
  });

  it('tells a function script when the request arrived, before its body was read', async () => {
    const seen: Array<{ receivedAt: number; calledAt: number }> = [];
    model.register('timed', ({ receivedAt }) => {
      seen.push({ receivedAt, calledAt: performance.timeOrigin + performance.now() });
      return { text: 'ok' };
    });
    const before = performance.timeOrigin + performance.now();
    // A body of a few MB: the server takes measurable time to read and parse it.
    const big = 'x'.repeat(4_000_000);
    await client.chat.completions.create({ model: 'timed', messages: [user(big)] });
    const after = performance.timeOrigin + performance.now();
    expect(seen).toHaveLength(1);
    const [{ receivedAt, calledAt }] = seen;
    expect(receivedAt).toBeGreaterThanOrEqual(before);
    expect(calledAt).toBeGreaterThan(receivedAt);
    expect(calledAt).toBeLessThanOrEqual(after);
    // Sub-millisecond precision, not Date.now()'s whole milliseconds.
    expect(Number.isInteger(receivedAt)).toBe(false);
  });

  it.each([
    { status: 429, type: 'rate_limit_error' as const, code: 'rate_limit_exceeded', cls: OpenAI.RateLimitError, stream: false },
    { status: 429, type: 'rate_limit_error' as const, code: 'rate_limit_exceeded', cls: OpenAI.RateLimitError, stream: true },
    { status: 401, type: 'invalid_request_error' as const, code: 'invalid_api_key', cls: OpenAI.AuthenticationError, stream: false },
    { status: 400, type: 'invalid_request_error' as const, code: 'context_length_exceeded', cls: OpenAI.BadRequestError, stream: true },
    { status: 503, type: 'server_error' as const, code: 'overloaded', cls: OpenAI.InternalServerError, stream: false },
  ])('error step $status (stream: $stream) surfaces as $cls.name', async ({ status, type, code, cls, stream }) => {
    const name = `error-${status}-${stream}`;
    model.register(name, [{ error: { status, type, code, message: `scripted ${status}`, headers: { 'retry-after': '7' } } }]);

    const err = await rejectionOf(client.chat.completions.create({ model: name, messages: [user('x')], stream }));
    expect(err).toBeInstanceOf(cls);
    expect(err.status).toBe(status);
    expect(err.code).toBe(code);
    expect(err.type).toBe(type);
    expect(err.message).toBe(`${status} scripted ${status}`);
    expect(err.headers.get('retry-after')).toBe('7');
    expect(err.headers.get('x-scripted-model')).toBe('true');
    expect(model.requests(name)).toEqual([expect.objectContaining({ stream, completed: true })]);
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    const err = await rejectionOf(client.chat.completions.create({ model: 'no-such-script', messages: [user('x')] }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe('model_not_found');
    expect(err.type).toBe('invalid_request_error');
  });

  it('marks a stream the client aborts as closedByClient and stops writing', async () => {
    model.register('slow', [{ text: 'x'.repeat(200), chunkSize: 1, chunkDelayMs: 20 }]);
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'slow', messages: [user('go slowly')], stream: true },
      { signal: controller.signal },
    );

    let received = '';
    const reading = (async () => {
      for await (const chunk of stream) {
        received += chunk.choices[0]?.delta.content ?? '';
        if (received.length >= 3) controller.abort();
      }
    })();
    // The openai Stream swallows the abort error and just ends the iteration.
    await reading.catch(() => undefined);

    const closed = await waitFor(() => model.requests('slow')[0]?.closedByClient === true, 1000);
    expect(closed).toBe(true);
    expect(model.requests('slow')[0].completed).toBe(false);
    expect(received.length).toBeLessThan(200);
  });

  it('resets the connection after resetAfterChunks content chunks, with no finish and no [DONE]', async () => {
    model.register('reset', [{ text: 'abcdefghij', chunkSize: 2, resetAfterChunks: 3 }]);
    const stream = await client.chat.completions.create({ model: 'reset', messages: [user('x')], stream: true });
    const received: string[] = [];
    const finishes: unknown[] = [];
    const err = await rejectionOf(
      (async () => {
        for await (const chunk of stream) {
          received.push(chunk.choices[0]?.delta.content ?? '');
          finishes.push(chunk.choices[0]?.finish_reason);
        }
      })(),
    );

    expect(received.filter(Boolean)).toEqual(['ab', 'cd', 'ef']);
    expect(finishes.every((f) => f === null)).toBe(true);
    // undici's error for a body cut short by the peer.
    expect(String(err?.message ?? err)).toMatch(/terminated/);
    expect(model.requests('reset')).toEqual([
      expect.objectContaining({ stream: true, completed: false, closedByClient: false, fault: 'reset' }),
    ]);
  });

  it('resets a non-streaming request before any body, which the client sees as a connection error', async () => {
    model.register('reset-plain', [{ text: 'never sent', resetAfterChunks: 0 }]);
    const err = await rejectionOf(client.chat.completions.create({ model: 'reset-plain', messages: [user('x')] }));
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(model.requests('reset-plain')[0]).toMatchObject({ completed: false, closedByClient: false, fault: 'reset' });
  });

  it('stalls after stallAfterChunks content chunks, holding the connection until the client goes away', async () => {
    model.register('stall', [{ text: 'abcdefghij', chunkSize: 2, stallAfterChunks: 2 }]);
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'stall', messages: [user('x')], stream: true },
      { signal: controller.signal },
    );
    let received = '';
    let ended = false;
    const reading = (async () => {
      for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
      ended = true;
    })().catch(() => undefined);

    expect(await waitFor(() => received === 'abcd', 1_000)).toBe(true);
    // Nothing more arrives, and the connection stays open.
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toBe('abcd');
    expect(ended).toBe(false);
    expect(model.requests('stall')[0]).toMatchObject({ fault: 'stall', completed: false, closedByClient: false });

    controller.abort();
    await reading;
    expect(await waitFor(() => model.requests('stall')[0].closedByClient, 1_000)).toBe(true);
    expect(model.requests('stall')[0].completed).toBe(false);
  });

  it('closes a stalled stream when the server closes', async () => {
    const fresh = await startScriptedModel({ scripts: { stall: [{ text: 'abc', chunkSize: 1, stallAfterChunks: 1 }] } });
    const c = new OpenAI({ baseURL: fresh.url, apiKey: 'scripted', maxRetries: 0 });
    const stream = await c.chat.completions.create({ model: 'stall', messages: [user('x')], stream: true });
    let received = '';
    const reading = (async () => {
      for await (const chunk of stream) received += chunk.choices[0]?.delta.content ?? '';
    })().then(
      () => 'ended',
      () => 'failed',
    );
    expect(await waitFor(() => received === 'a', 1_000)).toBe(true);
    const closing = Date.now();
    await fresh.close();
    expect(Date.now() - closing).toBeLessThan(1_000);
    expect(await reading).toBe('failed');
    expect(received).toBe('a');
  });

  it('lists registered scripts on GET /v1/models', async () => {
    model.register('listed', [{ text: 'x' }]);
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining([DEMO_SCRIPT_NAME, 'listed', 'stream-text']));
  });

  it('records every request in order, errored ones included', async () => {
    const fresh = await startScriptedModel({ scripts: { a: [{ text: 'ok' }], b: [{ error: { status: 400, message: 'bad' } }] } });
    try {
      const c = new OpenAI({ baseURL: fresh.url, apiKey: 'scripted', maxRetries: 0 });
      await c.chat.completions.create({ model: 'a', messages: [user('1')] });
      await rejectionOf(c.chat.completions.create({ model: 'b', messages: [user('2')] }));
      await rejectionOf(c.chat.completions.create({ model: 'a', messages: [user('3')] }));
      await rejectionOf(c.chat.completions.create({ model: 'missing', messages: [user('4')] }));
      expect(fresh.requests().map((r) => [r.script, r.body.messages[0].content, r.completed])).toEqual([
        ['a', '1', true],
        ['b', '2', true],
        ['a', '3', true],
        ['missing', '4', true],
      ]);
      expect(fresh.requests('a')).toHaveLength(2);
    } finally {
      await fresh.close();
    }
  });

  describe('demo script', () => {
    /** Runs one demo turn the way the agent does: streaming, assembled by the client. */
    async function turn(messages: ChatCompletionMessageParam[], tools: ChatCompletionTool[] | null = fsTools) {
      const stream = client.chat.completions.stream({ model: DEMO_SCRIPT_NAME, messages, ...(tools ? { tools } : {}) });
      let deltas = 0;
      stream.on('content', () => deltas++);
      const final = await stream.finalChatCompletion();
      const message = final.choices[0].message;
      const calls = (message.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [c] : []));
      return { message, calls, deltas };
    }

    /** Appends the assistant's tool call and a fake tool result, as the agent would. */
    function withResult(messages: ChatCompletionMessageParam[], message: any, result: string): ChatCompletionMessageParam[] {
      return [
        ...messages,
        { role: 'assistant', content: message.content, tool_calls: message.tool_calls },
        { role: 'tool', tool_call_id: message.tool_calls[0].id, content: result },
      ];
    }

    it('walks listFiles -> readFile -> answer', async () => {
      let messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'You are a helpful agent.' },
        user('What is in this workspace?'),
      ];

      const first = await turn(messages);
      expect(first.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['listFiles', { path: '.' }]]);

      messages = withResult(messages, first.message, 'src/\npackage.json\nguide.md\nnotes.txt\n');
      const second = await turn(messages);
      expect(second.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['readFile', { path: 'guide.md' }]]);
      expect(second.calls[0].id).not.toBe(first.calls[0].id);

      const content = '# Guide\nSecond line.\n';
      messages = withResult(messages, second.message, content);
      const third = await turn(messages);
      expect(third.calls).toEqual([]);
      expect(third.message.content).toContain('guide.md');
      expect(third.message.content).toContain('"# Guide"');
      expect(third.message.content).toContain(`${content.length} characters`);
      expect(third.deltas).toBe(Math.ceil(third.message.content!.length / 6));
    });

    it('reads the first file when none is .md or .txt, inside the listed directory', async () => {
      const messages: ChatCompletionMessageParam[] = [
        user('look in docs'),
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'listFiles', arguments: '{"path":"docs"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'img/\nb.json\na.ts' },
      ];
      const { calls } = await turn(messages);
      expect(calls.map((c) => JSON.parse(c.function.arguments))).toEqual([{ path: 'docs/b.json' }]);
    });

    it('writes notes.txt in an empty workspace, lists again, and does not loop', async () => {
      let messages: ChatCompletionMessageParam[] = [user('What is here?')];
      const list = await turn(messages);
      messages = withResult(messages, list.message, 'empty/\n');

      const write = await turn(messages);
      expect(write.calls.map((c) => c.function.name)).toEqual(['writeFile']);
      expect(JSON.parse(write.calls[0].function.arguments)).toMatchObject({ path: 'notes.txt', content: expect.any(String) });

      messages = withResult(messages, write.message, 'wrote notes.txt');
      const relist = await turn(messages);
      expect(relist.calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['listFiles', { path: '.' }]]);

      const stillEmpty = await turn(withResult(messages, relist.message, ''));
      expect(stillEmpty.calls).toEqual([]);
      expect(stillEmpty.message.content).toBeTruthy();
    });

    it('answers tool-less calls with a plan, a summary or a generic line', async () => {
      const plan = await turn([user('Find the README'), user('Write a short plan first.')], null);
      expect(plan.calls).toEqual([]);
      expect(plan.message.content).toMatch(/^1\. .+\n2\. .+/);

      const conversation: ChatCompletionMessageParam[] = [
        { role: 'system', content: 'Summarize the conversation below.' },
        user('a'),
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'listFiles', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'x.md' },
      ];
      const summary = await turn(conversation, null);
      expect(summary.message.content).toContain('3 messages');
      expect(summary.message.content).toContain('listFiles');

      const generic = await turn([user('hello')], null);
      expect(generic.message.content).toBeTruthy();
      expect(generic.message.content).not.toMatch(/^1\./);
      expect(generic.message.content).not.toContain('Summary');
    });
  });
});

describe('the demo at a slow pace (SCRIPTED_MODEL_PACE_MS, npm start -- --slow)', () => {
  it('waits before a tool call and between text chunks, so a person can pause or abort', async () => {
    const model = await startScriptedModel({ demoPaceMs: 150 });
    const client = new OpenAI({ baseURL: model.url, apiKey: 'scripted', maxRetries: 0 });
    try {
      let started = Date.now();
      const call = await client.chat.completions.create({ model: DEMO_SCRIPT_NAME, messages: [user('Look around the workspace.')], tools: fsTools });
      expect(call.choices[0].message.tool_calls?.[0]).toMatchObject({ function: { name: 'listFiles' } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(5 * 150 - 20);
      started = Date.now();
      const stream = await client.chat.completions.create({ model: DEMO_SCRIPT_NAME, messages: [user('Make a plan.')], stream: true });
      const arrivals: number[] = [];
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) arrivals.push(Date.now() - started);
      expect(arrivals.length).toBeGreaterThan(3);
      // The pace is the point here: chunks arrive about 150 ms apart, not all at once.
      expect(arrivals.at(-1)! - arrivals[0]).toBeGreaterThanOrEqual((arrivals.length - 1) * 150 - 50);
    } finally {
      await model.close();
    }
  });
});

describe('a provider quota (tokensPerMinute)', () => {
  it('answers 429 with retry-after once the minute\'s bucket is empty, and refills continuously', async () => {
    const model = await startScriptedModel({ tokensPerMinute: 100 });
    try {
      const client = new OpenAI({ baseURL: model.url, apiKey: 'scripted', maxRetries: 0 });
      // 'x'.repeat(200): 50 prompt tokens, 'ok': 1 completion token.
      model.register('q', () => ({ text: 'ok' }));
      const call = () => client.chat.completions.create({ model: 'q', messages: [user('x'.repeat(200))] });
      await call();
      const err = await rejectionOf(call());
      expect(err.status).toBe(429);
      expect(err.message).toMatch(/tokens per min \(TPM\): Limit 100, Used 51, Requested 51/);
      // 2 tokens short at 100 a minute: 1.2 s.
      expect(Number(err.headers.get('retry-after'))).toBe(2);
      const ms = Number(err.headers.get('retry-after-ms'));
      expect(ms).toBeGreaterThan(1_000);
      expect(ms).toBeLessThanOrEqual(1_200);
      await new Promise((r) => setTimeout(r, ms));
      await call();
      expect(model.requests('q').map((r) => !!r.rateLimited)).toEqual([false, true, false]);
    } finally {
      await model.close();
    }
  });
});

describe('the request log of a long-lived model (recordBodies, maxRecordedRequests)', () => {
  it('drops each body once answered and keeps only the newest records', async () => {
    const model = await startScriptedModel({ recordBodies: false, maxRecordedRequests: 2 });
    try {
      // The script still sees each request's body: the call is named in the answer.
      model.register('log', ({ request }) => ({ text: `seen ${textOf(request.messages[0].content)}` }));
      const answers: string[] = [];
      for (const n of [1, 2, 3]) {
        // Each call with its own API key, which a record keeps without the body.
        const client = new OpenAI({ baseURL: model.url, apiKey: `key-${n}`, maxRetries: 0 });
        const completion = await client.chat.completions.create({ model: 'log', messages: [user(`call ${n}`)] });
        answers.push(completion.choices[0].message.content ?? '');
      }
      expect(answers).toEqual(['seen call 1', 'seen call 2', 'seen call 3']);
      await waitFor(() => model.requests('log').every((r) => r.body === null), 2_000);
      expect(model.requests('log').map((r) => ({ apiKey: r.apiKey, body: r.body, completed: r.completed }))).toEqual([
        { apiKey: 'key-2', body: null, completed: true },
        { apiKey: 'key-3', body: null, completed: true },
      ]);
    } finally {
      await model.close();
    }
  });

  it('keeps bodies by default', async () => {
    const model = await startScriptedModel();
    try {
      const client = new OpenAI({ baseURL: model.url, apiKey: 'scripted', maxRetries: 0 });
      model.register('kept', [{ text: 'ok' }]);
      await client.chat.completions.create({ model: 'kept', messages: [user('keep me')] });
      expect(model.requests('kept')[0].body.messages).toEqual([{ role: 'user', content: 'keep me' }]);
    } finally {
      await model.close();
    }
  });

  it('refuses a maxRecordedRequests that is not a whole number', async () => {
    await expect(startScriptedModel({ maxRecordedRequests: -1 })).rejects.toThrow('maxRecordedRequests must be a whole number >= 0, got -1');
  });
});
