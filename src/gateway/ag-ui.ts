/**
 * AG-UI events (https://docs.ag-ui.com) of a run, mapped from the same events as `GET /v1/runs/:id/events`, for
 * front ends built on `@ag-ui/client`. Each event's AG-UI events go out together and only the last carries the
 * event's id: a client resuming with `Last-Event-ID` has every AG-UI event of the events before it.
 *
 * What maps: text (TEXT_MESSAGE_*, one message per model call and attempt), tool calls (TOOL_CALL_START/ARGS/END
 * when the call is first seen, TOOL_CALL_RESULT when it ends), transitions (STEP_FINISHED of the state left,
 * STEP_STARTED of the state entered, and a STATE_DELTA of `state`, `stateSince` and `step`), the public state
 * (STATE_SNAPSHOT when the stream opens, after a gap and at the end) and the end (RUN_FINISHED, outcome `success`
 * or `cancelled`; RUN_ERROR for a failed run). What does not map goes as CUSTOM, named after the native event:
 * `approval` (AG-UI's interrupts end the run, this one waits), `restart`, `retry`, `gap` and `stream` (degraded).
 * A stream error is RUN_ERROR with the error's code: the run may go on, and a reconnect continues it.
 *
 * A resumed stream is whole on its own (RUN_STARTED, a snapshot, the text message it continues reopened under
 * the same id), as `@ag-ui/client` verifies every response from scratch. AG-UI's threadId and runId are both the
 * workflow id.
 */
import type { StreamEvent } from '../common/stream';
import { z } from 'zod';
import { RunStateViewSchema, type PendingApproval, type RunStateView } from '../common/view';
import type { EventFormat } from './event-format';
import { answer } from './responses';

/**
 * An AG-UI event as `@ag-ui/core` 1.x defines it, the types this stream sends; test/ag-ui.test.ts checks that it fits
 * (the package is not needed at run time). The OpenAPI document describes the stream's events with it.
 */
export const AgUiEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('RUN_STARTED'), threadId: z.string(), runId: z.string() }),
  z.object({
    type: z.literal('RUN_FINISHED'),
    threadId: z.string(),
    runId: z.string(),
    result: z.unknown().optional(),
    outcome: z.discriminatedUnion('type', [z.object({ type: z.literal('success') }), z.object({ type: z.literal('cancelled') })]),
  }),
  z.object({ type: z.literal('RUN_ERROR'), message: z.string(), code: z.string().optional() }),
  z.object({ type: z.enum(['STEP_STARTED', 'STEP_FINISHED']), stepName: z.string() }),
  z.object({ type: z.literal('TEXT_MESSAGE_START'), messageId: z.string(), role: z.literal('assistant') }),
  z.object({ type: z.literal('TEXT_MESSAGE_CONTENT'), messageId: z.string(), delta: z.string() }),
  z.object({ type: z.literal('TEXT_MESSAGE_END'), messageId: z.string() }),
  z.object({ type: z.literal('TOOL_CALL_START'), toolCallId: z.string(), toolCallName: z.string() }),
  z.object({ type: z.literal('TOOL_CALL_ARGS'), toolCallId: z.string(), delta: z.string() }),
  z.object({ type: z.literal('TOOL_CALL_END'), toolCallId: z.string() }),
  z.object({ type: z.literal('TOOL_CALL_RESULT'), messageId: z.string(), toolCallId: z.string(), content: z.string(), role: z.literal('tool') }),
  z.object({ type: z.literal('STATE_SNAPSHOT'), snapshot: RunStateViewSchema }),
  z.object({ type: z.literal('STATE_DELTA'), delta: z.array(z.object({ op: z.literal('replace'), path: z.string(), value: z.unknown() })) }),
  z.object({ type: z.literal('CUSTOM'), name: z.string(), value: z.unknown() }),
]);
export type AgUiEvent = z.infer<typeof AgUiEventSchema>;

/** A fresh format per response: it keeps the text message, the step and the tool calls this client has been told about. */
export function agUiFormat(runId: string): EventFormat {
  const ids = { threadId: runId, runId };
  let text: string | undefined;
  let step: string | undefined;
  const tools = new Set<string>();

  const endText = (): AgUiEvent[] => {
    if (text === undefined) return [];
    const messageId = text;
    text = undefined;
    return [{ type: 'TEXT_MESSAGE_END', messageId }];
  };
  const endStep = (): AgUiEvent[] => {
    if (step === undefined) return [];
    const stepName = step;
    step = undefined;
    return [{ type: 'STEP_FINISHED', stepName }];
  };
  // A tool call is announced once, whole: its arguments are known by the time the run reports it.
  const tool = (toolCallId: string, toolCallName: string, args: string): AgUiEvent[] => {
    if (tools.has(toolCallId)) return [];
    tools.add(toolCallId);
    const delta: AgUiEvent[] = args ? [{ type: 'TOOL_CALL_ARGS', toolCallId, delta: args }] : [];
    return [...endText(), { type: 'TOOL_CALL_START', toolCallId, toolCallName }, ...delta, { type: 'TOOL_CALL_END', toolCallId }];
  };
  const custom = (name: string, value: unknown): AgUiEvent => ({ type: 'CUSTOM', name, value });

  const map = (type: string, data: unknown): AgUiEvent[] => {
    const e = data as StreamEvent;
    switch (type) {
      case 'text': {
        const t = e as Extract<StreamEvent, { type: 'text' }>;
        const messageId = `${runId}:text:${t.callNumber}.${t.attempt}`;
        const out: AgUiEvent[] = [];
        if (text !== messageId) {
          out.push(...endText(), { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' });
          text = messageId;
        }
        return t.text ? [...out, { type: 'TEXT_MESSAGE_CONTENT', messageId, delta: t.text }] : out;
      }
      case 'restart':
        // AG-UI cannot take text back either: the failed attempt's message stays, closed, and the retry's follows.
        return [...endText(), custom('restart', data)];
      case 'transition': {
        const t = e as Extract<StreamEvent, { type: 'transition' }>;
        const terminal = t.transition.to === 'COMPLETED' || t.transition.to === 'FAILED' || t.transition.to === 'ABORTED';
        const finished = endStep();
        const start: AgUiEvent[] = terminal ? [] : [{ type: 'STEP_STARTED', stepName: t.transition.to }];
        if (!terminal) step = t.transition.to;
        const delta: AgUiEvent = {
          type: 'STATE_DELTA',
          delta: [
            { op: 'replace', path: '/state', value: t.transition.to },
            { op: 'replace', path: '/stateSince', value: t.transition.at },
            { op: 'replace', path: '/step', value: t.step },
          ],
        };
        return [...finished, ...start, delta];
      }
      case 'toolStart': {
        const t = e as Extract<StreamEvent, { type: 'toolStart' }>;
        return tool(t.toolCallId, t.name, t.arguments);
      }
      case 'toolEnd': {
        const t = e as Extract<StreamEvent, { type: 'toolEnd' }>;
        // A failed tool's result is its error, as the model sees it.
        return [...tool(t.toolCallId, t.name, ''), { type: 'TOOL_CALL_RESULT', messageId: `${t.toolCallId}:result`, toolCallId: t.toolCallId, content: t.output, role: 'tool' }];
      }
      case 'approval': {
        const pending = (e as Extract<StreamEvent, { type: 'approval' }>).pending;
        return [...pending.flatMap((p: PendingApproval) => (p.kind === 'tool' ? tool(p.toolCallId, p.name, p.arguments) : [])), custom('approval', data)];
      }
      case 'gap':
        return [...endText(), custom('gap', data), { type: 'STATE_SNAPSHOT', snapshot: (data as { state: RunStateView }).state }];
      case 'retry':
      case 'approvalReminder':
      case 'stream':
        return [custom(type, data)];
      case 'end': {
        const state = (e as Extract<StreamEvent, { type: 'end' }>).state;
        return [...endText(), ...endStep(), { type: 'STATE_SNAPSHOT', snapshot: state }, ending(ids, state)];
      }
      case 'error': {
        const { code, message } = (data as { error: { code: string; message: string } }).error;
        return [{ type: 'RUN_ERROR', message, code }];
      }
      default:
        return [];
    }
  };

  return {
    startsWithState: true,
    start: (view) => [{ type: 'RUN_STARTED', ...ids } as AgUiEvent, ...(view ? [{ type: 'STATE_SNAPSHOT', snapshot: view } as AgUiEvent] : [])].map((ev) => line(ev)).join(''),
    event: (type, id, data) => {
      const events = map(type, data);
      return events.map((ev, i) => line(ev, i === events.length - 1 ? id : undefined)).join('');
    },
  };
}

/** How the run ended: RUN_FINISHED when it completed (its answer the result) or was aborted, RUN_ERROR when it failed. */
function ending(ids: { threadId: string; runId: string }, state: RunStateView): AgUiEvent {
  if (state.state === 'COMPLETED') return { type: 'RUN_FINISHED', ...ids, result: state.answer, outcome: { type: 'success' } };
  if (state.state === 'ABORTED') return { type: 'RUN_FINISHED', ...ids, outcome: { type: 'cancelled' } };
  return { type: 'RUN_ERROR', message: state.lastError ?? state.reason ?? 'the run failed', code: 'run_failed' };
}

const line = (ev: AgUiEvent, id?: string): string => `${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(answer(AgUiEventSchema, ev))}\n\n`;
