/**
 * A conversation in OpenAI's Chat Completions format, in and out of a run: the schema a run's `messages` input must
 * pass (each problem named by message index and field), and the conversions to and from the run's own messages.
 * Pure and JSON-only: the workflow and the clients use it.
 */
import { z } from 'zod';
import type { ChatMessage, ToolCall } from './chat';

/** An OpenAI chat message as a run returns it (`returnMessages`): text content only. */
export type OpenAIChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> }
  | { role: 'tool'; tool_call_id: string; content: string };

export const ConversationSchema = (() => {
  const TextPart = z.object({ type: z.literal('text', 'only text parts are supported'), text: z.string() });
  const Text = z.union([z.string(), z.array(TextPart).min(1)], 'must be a string or an array of text parts');
  const ToolCallSchema = z.object({
    id: z.string().min(1),
    type: z.literal('function').default('function'),
    function: z.object({ name: z.string().min(1), arguments: z.string() }),
  });
  const Message = z.discriminatedUnion(
    'role',
    [
      z.object({ role: z.literal('system'), content: Text, name: z.string().optional() }),
      z.object({ role: z.literal('user'), content: Text, name: z.string().optional() }),
      z.object({
        role: z.literal('assistant'),
        content: z.union([Text, z.null()]).optional(),
        tool_calls: z.array(ToolCallSchema).optional(),
        name: z.string().optional(),
      }),
      z.object({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: Text }),
    ],
    { error: 'role must be one of system, user, assistant, tool' },
  );
  return z
    .array(Message)
    .max(10_000)
    .superRefine((messages, ctx) => {
      // The provider refuses a conversation whose tool calls and results do not pair up: say which message breaks it.
      const open = new Set<string>();
      messages.forEach((m, i) => {
        if (m.role === 'system' && i > 0) ctx.addIssue({ code: 'custom', path: [i, 'role'], message: 'a system message may only come first' });
        if (m.role === 'assistant') {
          if (open.size > 0) ctx.addIssue({ code: 'custom', path: [i], message: `tool calls ${[...open].join(', ')} have no tool message answering them` });
          open.clear();
          if ((m.content === null || m.content === undefined) && !m.tool_calls?.length) ctx.addIssue({ code: 'custom', path: [i, 'content'], message: 'an assistant message needs content or tool_calls' });
          m.tool_calls?.forEach((c) => open.add(c.id));
        } else if (m.role === 'tool') {
          if (!open.delete(m.tool_call_id)) ctx.addIssue({ code: 'custom', path: [i, 'tool_call_id'], message: `answers no tool call of the assistant message before it (${m.tool_call_id})` });
        } else if (open.size > 0) {
          ctx.addIssue({ code: 'custom', path: [i], message: `tool calls ${[...open].join(', ')} have no tool message answering them` });
          open.clear();
        }
      });
      if (open.size > 0) ctx.addIssue({ code: 'custom', path: [messages.length - 1], message: `tool calls ${[...open].join(', ')} have no tool message answering them` });
    });
})();

export type InputConversation = z.output<typeof ConversationSchema>;

const text = (content: string | Array<{ text: string }>): string => (typeof content === 'string' ? content : content.map((p) => p.text).join(''));

/** A validated input conversation as the run's messages; its system message, if any, is answered apart. */
export function fromOpenAI(messages: InputConversation): { system: string | undefined; messages: ChatMessage[] } {
  const system = messages[0]?.role === 'system' ? text(messages[0].content) : undefined;
  const rest = (system === undefined ? messages : messages.slice(1)).map((m): ChatMessage => {
    switch (m.role) {
      case 'assistant': {
        const toolCalls: ToolCall[] = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
        return { role: 'assistant', content: m.content == null ? null : text(m.content), ...(toolCalls.length ? { toolCalls } : {}) };
      }
      case 'tool':
        return { role: 'tool', toolCallId: m.tool_call_id, content: text(m.content) };
      default:
        return { role: m.role, content: text(m.content) } as ChatMessage;
    }
  });
  return { system, messages: rest };
}

/** One of the run's messages in OpenAI's format (worker-only hints on tool calls left out). */
export function toOpenAIMessage(m: ChatMessage): OpenAIChatMessage {
  switch (m.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) } : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    default:
      return { role: m.role, content: m.content };
  }
}

/** The run's messages in OpenAI's format, as `returnMessages` answers them and a model call sends them. */
export const toOpenAI = (messages: readonly ChatMessage[]): OpenAIChatMessage[] => messages.map(toOpenAIMessage);
