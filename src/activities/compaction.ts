/**
 * Compaction: older messages are summarised by the model; the system prompt, the task and the recent turns
 * stay verbatim. Messages are summarised in chunks that fit one call, and the summaries summarised again,
 * so it works even when the whole history no longer fits in one call. It heartbeats while a (non-streamed)
 * summary is awaited, and a cancellation aborts the request in flight. A what-if fork's summarising request that the
 * original run sent already is answered with the summary it got then (`replay`); the result names every summary by
 * its request's hash, for forks of this run.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import type { ChatMessage, CompactionRequest, CompactionResult, Usage } from '../common/chat';
import { addUsage, emptyUsage, isRecordedSummary } from '../common/chat-helpers';
import { FailureType, ModelErrorType } from '../common/failures';
import { requestHash as hashRequest } from '../common/replay';
import { COMPACTION_CALL } from '../common/sinks';
import type { ProviderBudget } from '../quota';
import { classifyModelError } from './errors';
import { budgeted } from './quota';
import { routeOf, secretsOf, type Providers } from './providers';
import { withKeyRotation } from './key-rotation';
import { heartbeating } from './heartbeat';
import { stoppableCall, type ModelCallsInFlight } from './calls-in-flight';
import { usageOf } from './usage';
import { recordProvider } from './genai-spans';

export interface CompactionDeps {
  openai: OpenAI;
  defaultModel: string;
  /** Named providers and their keys (`provider/model`); the summary goes to the route's keys in turn, as a model call does. */
  providers?: Providers;
  /** Characters of transcript sent in one summarising call. @default 24000 */
  chunkChars?: number;
  /** The fleet's provider budget: each summarising call reserves before it starts. */
  budget?: ProviderBudget;
  /** The model requests this worker makes, which the run's workflow task stops at once when it runs here. */
  callsInFlight?: ModelCallsInFlight;
}

export const SUMMARY_PREFIX = 'Summary of the earlier conversation:';
const SUMMARISE_PROMPT =
  'You summarise part of an agent transcript for the agent itself. Keep facts, file names, tool results that matter, ' +
  'decisions and open questions. Be concise; plain text; no preamble.';

const render = (m: ChatMessage): string => {
  if (m.role === 'assistant') {
    const calls = m.toolCalls?.map((c) => `${c.name}(${c.arguments})`).join(', ');
    return `assistant: ${m.content ?? ''}${calls ? ` [calls: ${calls}]` : ''}`;
  }
  return m.role === 'tool' ? `tool result: ${m.content}` : `${m.role}: ${m.content}`;
};

const CUT = ' [cut]';

/** Split rendered lines into chunks of at most `max` characters; a longer line is cut to fit. */
export function chunkTranscript(lines: string[], max: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const raw of lines) {
    const line = raw.length > max ? `${raw.slice(0, max - CUT.length)}${CUT}` : raw;
    if (current && current.length + line.length + 1 > max) {
      chunks.push(current);
      current = '';
    }
    current += (current ? '\n' : '') + line;
  }
  if (current) chunks.push(current);
  return chunks;
}

/** Where the recent tail starts: never between an assistant's tool calls and their results. */
export function recentStart(messages: ChatMessage[], keepRecent: number, first: number): number {
  let start = Math.max(first, messages.length - keepRecent);
  while (start > first && messages[start]?.role === 'tool') start--;
  return start;
}

export function createCompactContext(deps: CompactionDeps) {
  return async function compactContext(request: CompactionRequest): Promise<CompactionResult> {
    const ctx = Context.current();
    const model = request.model ?? deps.defaultModel;
    const { messages } = request;
    // The system prompt and the turn's task (its prompt) always stay; the conversation before the task may be summarised.
    const first = Math.max(0, messages.findIndex((m) => m.role !== 'system'));
    const head = messages.slice(0, first);
    const at = request.taskIndex ?? messages.findIndex((m) => m.role === 'user');
    // Few but huge messages: summarise the recent turns too rather than give up.
    let start = recentStart(messages, request.keepRecent, Math.max(first, at + 1));
    if (start === Math.max(first, at + 1)) start = messages.length;
    // The task stays verbatim, before the summary of the rest (what came before it and its turn's earlier steps).
    const task = at >= first && at < start ? [messages[at]] : [];
    const older = messages.slice(first, start).filter((_, i) => first + i !== at);
    if (older.length === 0) {
      throw ApplicationFailure.create({ type: FailureType.CompactionImpossible, message: 'nothing to compact: the task and the recent turns alone exceed the context', nonRetryable: true });
    }
    let usage: Usage = emptyUsage();
    let calls = 0;
    const progress = { round: 0, done: 0 };
    /** The summaries this compaction used, by their requests' hashes, and how many of them the provider wrote. */
    const summaries: Record<string, string> = {};
    let written = 0;

    const route = await routeOf(deps, model);

    recordProvider(route);
    /** One summary of `chunk`; a cancellation aborts the request and ends the activity as cancelled. */
    const summarise = async (chunk: string, signal: AbortSignal): Promise<string> => {
      const asked = [{ role: 'system' as const, content: SUMMARISE_PROMPT }, { role: 'user' as const, content: chunk }];
      const hash = hashRequest({ kind: 'compaction', model, messages: asked, tools: null, maxOutputTokens: null });
      // A what-if fork's recorded summary of this very request: no provider call, no tokens.
      const recorded = request.replay?.[hash];
      if (recorded && isRecordedSummary(recorded)) return (summaries[hash] = recorded.summary);
      try {
        const id = `${ctx.info.workflowExecution?.workflowId ?? ctx.info.activityId}:compaction:${ctx.info.activityId}:${++calls}`;
        const response = await budgeted(deps.budget, id, asked, signal, () =>
          withKeyRotation(route, deps.providers, () => signal.aborted, ctx, (client) => client.chat.completions.create({ model: route.model, messages: asked }, { signal })),
        );
        const u = response.usage;
        if (u) usage = addUsage(usage, usageOf(u));
        written++;
        return (summaries[hash] = response.choices[0]?.message?.content?.trim() ?? '');
      } catch (err) {
        if (signal.aborted) throw new CancelledFailure('compaction cancelled');
        throw classifyModelError(err, secretsOf(deps));
      }
    };

    /** Chunk by chunk, then the summaries, until one summary is left; a chunk too large halves the chunk size. */
    const compact = async (signal: AbortSignal): Promise<string | undefined> => {
      let chunkChars = deps.chunkChars ?? 24_000;
      let texts = older.map(render);
      for (let round = 0; round < 8; round++) {
        progress.round = round;
        const summaries: string[] = [];
        for (const chunk of chunkTranscript(texts, chunkChars)) {
          progress.done = summaries.length;
          try {
            summaries.push(await summarise(chunk, signal));
          } catch (err) {
            if (!(err instanceof ApplicationFailure && err.type === ModelErrorType.ContextOverflow && chunkChars > 2_000)) throw err;
            chunkChars = Math.floor(chunkChars / 2);
            summaries.length = 0;
            break; // start this round again with smaller chunks
          }
        }
        if (summaries.length === 1) return summaries[0];
        if (summaries.length > 0) texts = summaries;
      }
      return undefined;
    };

    // A summary is not streamed: the ticker keeps the activity alive (and cancellable) while the model writes it, and
    // the run stops it at once when it runs here.
    const summary = await heartbeating(
      () => ({ ...progress }),
      () => stoppableCall(ctx, deps.callsInFlight, COMPACTION_CALL, compact),
    );
    if (summary === undefined) {
      throw ApplicationFailure.create({ type: FailureType.CompactionImpossible, message: 'compaction did not converge to one summary', nonRetryable: true });
    }
    const summaryMessage: ChatMessage = { role: 'user', content: `${SUMMARY_PREFIX}\n${summary}` };
    return {
      messages: [...head, ...task, summaryMessage, ...messages.slice(start)],
      summarizedMessages: older.length,
      usage,
      summaries,
      ...(written === 0 ? { replayed: true as const } : {}),
    };
  };
}
