/**
 * The Vercel AI SDK's UI message stream (protocol v1) of a run, mapped from the same events as `GET /v1/runs/:id/events`,
 * so that `useChat` renders a run as one assistant message. Each event's chunks go out together and only the last
 * carries the event's id: a client resuming with `Last-Event-ID` has every chunk of the events before it.
 *
 * A resumed stream is whole on its own (it opens the text part it continues and announces tools it ends), as the
 * AI SDK parses every response from scratch. Transitions have no counterpart and are left out.
 */
import type { StreamEvent } from '../common/stream';
import { z } from 'zod';
import type { PendingApproval, RunStateView } from '../common/view';
import type { EventFormat } from './event-format';
import { answer } from './responses';

/**
 * A UI message chunk as the AI SDK's `UIMessageChunk` defines it, the types this stream sends: ai 6.x, the line that
 * supports Node 20 (7.x wants Node 22); test/ui-message-stream.test.ts checks that it fits. The OpenAPI document
 * describes the stream's events with it.
 */
export const ChunkSchema = z.union([
  z.object({ type: z.literal('start'), messageId: z.string() }),
  z.object({ type: z.enum(['start-step', 'finish-step']) }),
  z.object({ type: z.enum(['text-start', 'text-end']), id: z.string() }),
  z.object({ type: z.literal('text-delta'), id: z.string(), delta: z.string() }),
  z.object({ type: z.literal('tool-input-available'), toolCallId: z.string(), toolName: z.string(), input: z.unknown(), dynamic: z.literal(true) }),
  z.object({ type: z.literal('tool-output-available'), toolCallId: z.string(), output: z.unknown(), dynamic: z.literal(true) }),
  z.object({ type: z.literal('tool-output-error'), toolCallId: z.string(), errorText: z.string(), dynamic: z.literal(true) }),
  z.object({ type: z.literal('tool-approval-request'), approvalId: z.string(), toolCallId: z.string() }),
  z.object({ type: z.literal('tool-output-denied'), toolCallId: z.string() }),
  z.object({ type: z.templateLiteral(['data-', z.string()]), data: z.unknown(), transient: z.literal(true) }),
  z.object({ type: z.literal('finish'), finishReason: z.literal('stop') }),
  z.object({ type: z.literal('abort'), reason: z.string().optional() }),
  z.object({ type: z.literal('error'), errorText: z.string() }),
]);
export type Chunk = z.infer<typeof ChunkSchema>;

export const UI_MESSAGE_STREAM_HEADERS = { 'x-vercel-ai-ui-message-stream': 'v1' };

/** A fresh format per response: it keeps which text part and tools this client has been told about. */
export function uiMessageStreamFormat(runId: string): EventFormat {
  let text: string | undefined;
  let call: number | undefined;
  const tools = new Set<string>();
  /** A resumed attempt's text part is the open part it goes on with. */
  const joined = new Map<string, string>();

  const endText = (): Chunk[] => {
    if (text === undefined) return [];
    const id = text;
    text = undefined;
    return [{ type: 'text-end', id }];
  };
  const tool = (toolCallId: string, toolName: string, args: string | undefined): Chunk[] => {
    if (tools.has(toolCallId)) return [];
    tools.add(toolCallId);
    return [...endText(), { type: 'tool-input-available', toolCallId, toolName, input: args === undefined ? undefined : parseArgs(args), dynamic: true }];
  };

  const map = (type: string, data: unknown): Chunk[] => {
    const e = data as StreamEvent;
    switch (type) {
      case 'text': {
        const t = e as Extract<StreamEvent, { type: 'text' }>;
        const id = joined.get(`text-${t.callNumber}-${t.attempt}`) ?? `text-${t.callNumber}-${t.attempt}`;
        const out: Chunk[] = [];
        if (text !== id) {
          out.push(...endText());
          // One step per model call.
          if (call !== t.callNumber) out.push(...(call === undefined ? [] : [{ type: 'finish-step' } as Chunk]), { type: 'start-step' });
          call = t.callNumber;
          text = id;
          out.push({ type: 'text-start', id });
        }
        return t.text ? [...out, { type: 'text-delta', id, delta: t.text }] : out;
      }
      case 'restart': {
        // ai 6 cannot take a part back: the text the failed attempt streamed stays, closed, and the retry's text
        // follows in a part of its own after this marker.
        const r = e as Extract<StreamEvent, { type: 'restart' }>;
        if (call !== r.callNumber) return [];
        return [...endText(), { type: 'data-restart', data, transient: true }];
      }
      case 'resume': {
        // The text goes on in the part this client has open; a client without one gets the new text in a part of its own.
        const r = e as Extract<StreamEvent, { type: 'resume' }>;
        if (text?.startsWith(`text-${r.callNumber}-`)) joined.set(`text-${r.callNumber}-${r.attempt}`, text);
        return [];
      }
      case 'toolStart': {
        const t = e as Extract<StreamEvent, { type: 'toolStart' }>;
        return tool(t.toolCallId, t.name, t.arguments);
      }
      case 'toolEnd': {
        const t = e as Extract<StreamEvent, { type: 'toolEnd' }>;
        // A rejected call is a denied tool part: `useChat` shows it as output-denied, no longer approval-requested.
        const end: Chunk = t.rejected
          ? { type: 'tool-output-denied', toolCallId: t.toolCallId }
          : t.ok
            ? { type: 'tool-output-available', toolCallId: t.toolCallId, output: t.output, dynamic: true }
            : { type: 'tool-output-error', toolCallId: t.toolCallId, errorText: t.output, dynamic: true };
        return [...tool(t.toolCallId, t.name, undefined), end];
      }
      case 'approval':
        return (e as Extract<StreamEvent, { type: 'approval' }>).pending.flatMap((p: PendingApproval): Chunk[] =>
          // A budget request is no tool call: the AI SDK has no part for it.
          p.kind === 'tool' ? [...tool(p.toolCallId, p.name, p.arguments), { type: 'tool-approval-request', approvalId: p.toolCallId, toolCallId: p.toolCallId }] : [{ type: 'data-approval', data: p, transient: true }],
        );
      case 'retry':
      case 'approvalReminder':
      case 'gap':
      case 'stream':
        return [{ type: `data-${type}`, data, transient: true }];
      case 'end':
        return [...endText(), ...(call === undefined ? [] : [{ type: 'finish-step' } as Chunk]), ...ending((e as Extract<StreamEvent, { type: 'end' }>).state)];
      case 'error':
        return [...endText(), { type: 'error', errorText: (data as { error: { message: string } }).error.message }];
      default:
        return [];
    }
  };

  return {
    headers: UI_MESSAGE_STREAM_HEADERS,
    start: () => chunk({ type: 'start', messageId: runId }),
    event: (type, id, data) => {
      const chunks = map(type, data);
      return chunks.map((c, i) => chunk(c, i === chunks.length - 1 ? id : undefined)).join('');
    },
    end: () => 'data: [DONE]\n\n',
  };
}

/** How the run ended: `finish` when it completed, `abort` when aborted, `error` when it failed. */
function ending(state: RunStateView): Chunk[] {
  if (state.state === 'COMPLETED') return [{ type: 'finish', finishReason: 'stop' }];
  if (state.state === 'ABORTED') return [{ type: 'abort', ...(state.reason ? { reason: state.reason } : {}) }];
  return [{ type: 'error', errorText: state.lastError ?? state.reason ?? 'the run failed' }];
}

const chunk = (c: Chunk, id?: string): string => `${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(answer(ChunkSchema, c))}\n\n`;

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
