/**
 * Compaction: older messages are summarised by the model; the system prompt, the task and the recent turns
 * stay verbatim. Messages are summarised in chunks that fit one call, and the summaries summarised again,
 * so it works even when the whole history no longer fits in one call.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import type { ChatMessage, CompactionRequest, CompactionResult, Usage } from '../common/chat';
import { addUsage, emptyUsage } from '../common/chat';
import { classifyModelError, ModelErrorType } from './errors';

export interface CompactionDeps {
  openai: OpenAI;
  defaultModel: string;
  /** Characters of transcript sent in one summarising call. @default 24000 */
  chunkChars?: number;
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
    // The system prompt and the task (the first user message) always stay.
    const taskIndex = messages.findIndex((m) => m.role === 'user');
    const head = messages.slice(0, taskIndex + 1);
    // Few but huge messages: summarise the recent turns too rather than give up.
    let start = recentStart(messages, request.keepRecent, taskIndex + 1);
    if (start === taskIndex + 1) start = messages.length;
    const older = messages.slice(taskIndex + 1, start);
    if (older.length === 0) {
      throw ApplicationFailure.create({ type: 'CompactionImpossible', message: 'nothing to compact: the task and the recent turns alone exceed the context', nonRetryable: true });
    }
    let usage: Usage = emptyUsage();
    let chunkChars = deps.chunkChars ?? 24_000;
    let texts = older.map(render);
    // Summarise chunk by chunk, then the summaries, until one summary is left.
    for (let round = 0; round < 8; round++) {
      const summaries: string[] = [];
      for (const chunk of chunkTranscript(texts, chunkChars)) {
        ctx.heartbeat({ round, done: summaries.length });
        try {
          const response = await deps.openai.chat.completions.create(
            { model, messages: [{ role: 'system', content: SUMMARISE_PROMPT }, { role: 'user', content: chunk }] },
            { signal: ctx.cancellationSignal },
          );
          summaries.push(response.choices[0]?.message?.content?.trim() ?? '');
          const u = response.usage;
          if (u) usage = addUsage(usage, { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens, totalTokens: u.total_tokens });
        } catch (err) {
          const failure = classifyModelError(err, [deps.openai.apiKey]);
          // A chunk too large for the model: halve the chunk size and start this round again.
          if (failure.type === ModelErrorType.ContextOverflow && chunkChars > 2_000) {
            chunkChars = Math.floor(chunkChars / 2);
            summaries.length = 0;
            break;
          }
          throw failure;
        }
      }
      if (summaries.length === 1) {
        const summary: ChatMessage = { role: 'user', content: `${SUMMARY_PREFIX}\n${summaries[0]}` };
        return { messages: [...head, summary, ...messages.slice(start)], summarizedMessages: older.length, usage };
      }
      if (summaries.length > 0) texts = summaries;
    }
    throw ApplicationFailure.create({ type: 'CompactionImpossible', message: 'compaction did not converge to one summary', nonRetryable: true });
  };
}
