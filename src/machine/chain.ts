/**
 * Conversation chaining: a model call sends a reference to the conversation the
 * previous call stored and only the messages since (codec/conversation-store.ts), so a step's work stays flat as
 * the run grows. The chain lives in the snapshot: it applies while the conversation only grew since it was stored,
 * and the machine drops it wherever the conversation is rewritten (compaction, a continued answer joined, a new run).
 */
import type { ConversationRef, ModelRequest, ModelResponse } from '../common/chat';
import type { RunSnapshot } from './snapshot';

/** The request with a chain: the stored conversation and the messages since; otherwise every message, and the worker starts a chain. */
export function chained(s: RunSnapshot, request: ModelRequest): ModelRequest {
  const base = s.chain;
  if (base && request.messages.length >= base.count) return { ...request, messages: request.messages.slice(base.count), chain: { base } };
  return { ...request, chain: {} };
}

/** The chain after a response: the conversation this call stored, when it holds exactly what the call was sent. */
export function chainAfter(s: RunSnapshot, r: ModelResponse): ConversationRef | null {
  const stored = r.conversation;
  return stored && stored.count === s.messages.length && s.messages.length > 0 ? stored : s.chain;
}
