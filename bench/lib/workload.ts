/**
 * The one agent workload every system runs: a run of S steps is S model calls that each ask for one `readFile`
 * tool call, then one last model call that answers. The scripted model serves it and records when each call
 * arrives, so every system's per-step time is measured at the same place by the same clock.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Script, ScriptStep } from '../../src/scripted-model';

/** Name of the scripted model's policy; every system sends it as the model name. */
export const BENCH_MODEL = 'bench';
/** A cycle of five files: longer than the product's loop guard looks for (cycles of up to three calls). */
export const FILES = ['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt'];
export const TOOL_NAME = 'readFile';
/** Every system sends the same system prompt. */
export const SYSTEM_PROMPT = 'You are a benchmark agent: call the tool you are asked to, then answer.';

/** The tool as the floor and LangGraph send it; the same shape the product derives from its zod schema. */
export const READ_FILE_TOOL = {
  type: 'function' as const,
  function: {
    name: TOOL_NAME,
    description: 'Read a UTF-8 text file from the workspace.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', minLength: 1, maxLength: 1024, description: 'Path relative to the workspace root' } },
      required: ['path'],
      additionalProperties: false,
    },
  },
};

export interface ModelSettings {
  /** Delay before the first streamed chunk (or the whole body), per model call. */
  latencyMs: number;
  /**
   * A provider's context window in tokens (about 4 characters a token, as `tokensOf` counts them): a request over it
   * is refused with `context_length_exceeded`, as OpenAI does, and every answer reports its prompt's tokens so that a
   * run can compact before it gets there. Absent: no window, and a rough usage.
   */
  contextWindowTokens?: number;
}

/** What a summary of the bench's transcript says, so that the count of files read survives compaction. */
const SUMMARY_RE = /bench summary: read (\d+) files/g;
const TOOL_RESULT_RE = /^tool result: /gm;

/** Files read that summaries in `text` stand for. */
const summarised = (text: string) => [...text.matchAll(SUMMARY_RE)].reduce((n, m) => n + Number(m[1]), 0);

/** A request's tokens as the bench's provider counts them: 4 characters a token, and 4 for each message's framing. */
export function tokensOf(messages: Array<{ role: string; content?: unknown; tool_calls?: Array<{ function?: { name?: string; arguments?: string } }> }>): number {
  let chars = 0;
  for (const m of messages) {
    chars += textOf(m.content).length;
    for (const c of m.tool_calls ?? []) chars += (c.function?.name ?? '').length + (c.function?.arguments ?? '').length;
  }
  return Math.ceil(chars / 4) + 4 * messages.length;
}

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';

/** The prompt names the run so the scripted model can tell runs apart, and the step count so it knows when to answer. */
export const promptOf = (runId: string, steps: number) => `bench run ${runId} steps ${steps}: read the files, one per step, then say done.`;

const PROMPT_RE = /^bench run (\S+) steps (\d+):/;

/** The run id and step count in a request's first user message. */
export function parsePrompt(messages: Array<{ role: string; content?: unknown }>): { runId: string; steps: number } | undefined {
  const first = messages.find((m) => m.role === 'user');
  const text = typeof first?.content === 'string' ? first.content : Array.isArray(first?.content) ? first.content.map((p: any) => p?.text ?? '').join('') : '';
  const match = PROMPT_RE.exec(text);
  return match ? { runId: match[1], steps: Number(match[2]) } : undefined;
}

/** One model call as the scripted model saw it: the run, the 1-based call number, and when it arrived (ms, one clock). */
export interface Arrival {
  runId: string;
  call: number;
  /** When the script saw the call: its request read and parsed. */
  t: number;
  /** How long the model server took to read and parse the request before that: it grows with the conversation. */
  readMs?: number;
}

/**
 * The policy: call k (k = files read so far + 1) asks for `readFile` of a cycling file while k <= steps, then answers.
 * Files read are the tool results in the request, and those that the run's summaries stand for: with a context window,
 * a request that is not a bench run's (a run's compaction, summarising its transcript) is answered with
 * `bench summary: read N files`, N counted in the text it summarises. `onArrival` sees every run's call as it arrives.
 */
export function benchScript(settings: () => ModelSettings, onArrival: (a: Arrival) => void, now: () => number, onSummary?: () => void): Script {
  return ({ request, receivedAt }): ScriptStep => {
    const t = now();
    const messages = (request?.messages ?? []) as Array<{ role: string; content?: unknown }>;
    const run = parsePrompt(messages);
    const window = settings().contextWindowTokens;
    const tokens = window ? tokensOf(messages) : 0;
    const firstChunkDelayMs = settings().latencyMs;
    if (window && tokens > window) {
      if (request) request.messages = [];
      return { error: { status: 400, message: `This model's maximum context length is ${window} tokens; the request has ${tokens}`, code: 'context_length_exceeded' } };
    }
    if (window && !run) {
      const text = messages.map((m) => textOf(m.content)).join('\n');
      const read = (text.match(TOOL_RESULT_RE)?.length ?? 0) + summarised(text);
      onSummary?.();
      if (request) request.messages = [];
      return { text: `bench summary: read ${read} files`, usage: { prompt_tokens: tokens, completion_tokens: 8 } };
    }
    const userText = window ? messages.filter((m) => m.role === 'user').map((m) => textOf(m.content)).join('\n') : '';
    const done = messages.filter((m) => m.role === 'tool').length + summarised(userText);
    const call = done + 1;
    if (run) onArrival({ runId: run.runId, call, t, readMs: t - receivedAt });
    // The scripted model keeps every request body it served; drop the conversation so a 500-step run does not hold
    // hundreds of megabytes there (usage is given, a rough constant per message, so nothing reads them after this).
    const usage = { prompt_tokens: window ? tokens : 50 * messages.length, completion_tokens: 12 };
    if (request) request.messages = [];
    if (!run || call > run.steps) return { text: `done: read ${done} files`, firstChunkDelayMs, chunkSize: 64, usage };
    return { toolCalls: [{ id: `call_${call}`, name: TOOL_NAME, arguments: { path: FILES[(call - 1) % FILES.length] } }], firstChunkDelayMs, usage };
  };
}

/** Writes the workspace every system's tool reads: five files of `bytes` characters each. */
export function writeWorkspace(dir: string, bytes: number): void {
  mkdirSync(dir, { recursive: true });
  for (const name of FILES) {
    const body = `${name}: ${'lorem ipsum dolor sit amet '.repeat(Math.ceil(bytes / 27) + 1)}`;
    writeFileSync(path.join(dir, name), body.slice(0, bytes));
  }
}

/** Each run's calls by number, at their first arrival: a call that arrives twice (a retry after a crash) counts once. */
function firstArrivals(arrivals: Arrival[]): Map<string, Map<number, Arrival>> {
  const byRun = new Map<string, Map<number, Arrival>>();
  for (const a of arrivals) {
    const calls = byRun.get(a.runId) ?? new Map<number, Arrival>();
    if (!calls.has(a.call)) calls.set(a.call, a);
    byRun.set(a.runId, calls);
  }
  return byRun;
}

/** For each run, `of(call k, call k + 1)` for every step k that has both calls. */
function perStep(arrivals: Arrival[], of: (call: Arrival, next: Arrival) => number): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [runId, calls] of firstArrivals(arrivals)) {
    const values: number[] = [];
    for (let k = 1; calls.has(k) && calls.has(k + 1); k++) values.push(of(calls.get(k)!, calls.get(k + 1)!));
    out.set(runId, values);
  }
  return out;
}

/**
 * Per-step times of each run from its arrivals: step k is from the arrival of call k to that of call k + 1, so it holds
 * the model's answer to call k, the system's own work, the tool call, and the dispatch of the next call.
 * A call that arrives twice (a retry after a crash) counts from its first arrival to the next call's first arrival.
 */
export const stepTimes = (arrivals: Arrival[]): Map<string, number[]> => perStep(arrivals, (call, next) => next.t - call.t);

/**
 * The model server's part of each step: how long it took to read and parse the request that ends step k (call k + 1's),
 * which carries the whole conversation. NaN where the arrival did not say.
 */
export const readTimes = (arrivals: Arrival[]): Map<string, number[]> => perStep(arrivals, (_call, next) => next.readMs ?? NaN);
