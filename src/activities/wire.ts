/**
 * A chat request's body as the provider is sent it. A run's conversation only grows, and at step 500 it is ~600 kB of
 * JSON: encoding it whole on every call (the `openai` client's `JSON.stringify`, then UTF-8) cost about 2 ms of the
 * worker's CPU a step there, more than all the rest the step's activity does (BENCHMARKS.md, issue 26). So the
 * messages of a call are encoded once, kept beside the conversation they belong to, and the next call of the run
 * encodes only the messages it adds.
 */
import type { ChatMessage } from '../common/chat';
import { toOpenAIMessage } from '../common/conversation';

/**
 * The JSON of each conversation's messages, comma-separated, keyed by the array itself: it lives as long as the
 * conversation does (the conversation store's memory), and no longer.
 */
const encoded = new WeakMap<readonly ChatMessage[], Buffer>();

/**
 * The encoded messages of `messages`. `base`, when given, must be the conversation `messages` goes on from (its first
 * `base.length` messages, the same objects): what is known of it is reused, and only the rest is encoded.
 */
export function encodeMessages(messages: readonly ChatMessage[], base?: readonly ChatMessage[]): Buffer {
  const known = encoded.get(messages);
  if (known) return known;
  const prefix = base && base.length <= messages.length ? encoded.get(base) : undefined;
  const from = prefix ? base!.length : 0;
  const added = Buffer.from(messages.slice(from).map((m) => JSON.stringify(toOpenAIMessage(m))).join(','));
  const all = !prefix || prefix.length === 0 ? added : added.length === 0 ? prefix : Buffer.concat([prefix, COMMA, added]);
  encoded.set(messages, all);
  return all;
}

const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']}');

/**
 * The request's JSON: `params` as `JSON.stringify` writes them, with `messages` (encoded by `encodeMessages`) added
 * last. The same document as `JSON.stringify({ ...params, messages })`, but for the order of its keys.
 */
export function chatRequestBody(params: Record<string, unknown>, messages: Buffer): Buffer {
  const head = JSON.stringify(params);
  return Buffer.concat([Buffer.from(`${head.slice(0, -1)}${head === '{}' ? '' : ','}"messages":[`), messages, CLOSE]);
}

/**
 * A fetch for provider requests that follows no redirect. A request that may follow one is sent with a copy of its
 * body kept to send again (the fetch standard clones it), which for a long run's request cost about as much CPU as
 * encoding it. Provider APIs do not redirect their POSTs; one that does fails the call at once, saying so
 * (errors.ts, `REDIRECTED`).
 */
export function withoutRedirects(fetchImpl: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    // `window: null` with `redirect: 'error'` is what lets undici send the request without that copy.
    const response = await fetchImpl(input, { ...init, redirect: 'error', window: null });
    return init?.signal ? abortable(response, init.signal) : response;
  };
}

/**
 * The response with a body that `signal` ends itself. With `redirect: 'error'`, undici (Node 20's 6.x, and the 6.x
 * package) keeps nothing alive that links the caller's signal to the request once its `Request` object is collected,
 * so an abort after a garbage collection went unheard and the provider's stream kept coming (nodejs/undici#4627; fixed
 * in undici 7 by #4750). Aborted, the pipe cancels undici's body, which closes the connection, and errors the body
 * the caller reads with the abort.
 */
function abortable(response: Response, signal: AbortSignal): Response {
  if (!response.body) return response;
  const body = response.body.pipeThrough(new TransformStream(), { signal });
  const piped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(piped, 'url', { value: response.url }); // for the client's logs
  return piped;
}
