/**
 * The scripted model policy of a chaos run. Each run makes three model calls: a streamed one that calls
 * `recordEffect` and `listFiles`, one that calls `readFile`, and a final answer derived from the run's prompt
 * and the file it read, so a completed run can be checked for the right answer.
 */
import type { ScriptContext, ScriptStep } from '../src/scripted-model';

export const CHAOS_SCRIPT = 'chaos';
/** The workspace file every run reads; its content is part of the expected answer. */
export const CHAOS_FILE = 'chaos.txt';
export const CHAOS_FILE_CONTENT = 'durable';

export const chaosPrompt = (runId: string, token: string) =>
  `Chaos run run=${runId} token=${token}. Record the effect, list the workspace, read ${CHAOS_FILE}, then answer.`;

/** The one right answer: the token reversed, then what the file says. */
export const expectedAnswer = (token: string, fileContent = CHAOS_FILE_CONTENT) => `${[...token].reverse().join('')}:${fileContent.trim()}`;

/** The run id and token named in a request's user message, if any. */
export function promptFields(body: any): { runId: string; token: string } | undefined {
  const user = (body?.messages ?? []).find((m: any) => m?.role === 'user');
  const match = /run=(\S+) token=([a-z0-9]+)/.exec(typeof user?.content === 'string' ? user.content : '');
  return match ? { runId: match[1], token: match[2] } : undefined;
}

/** Slow enough streaming that kills land mid-stream, fast enough that a run takes a few seconds. */
const stream = { chunkSize: 4, chunkDelayMs: 60, firstChunkDelayMs: 150 };

export function chaosScript({ request }: ScriptContext): ScriptStep {
  const fields = promptFields(request);
  if (!fields) return { error: { status: 400, message: 'chaos script: no run=... token=... in the prompt' } };
  const { runId, token } = fields;
  // The step follows from the conversation, not from a call counter, so a re-sent call gets the same answer.
  const turns = (request.messages as any[]).filter((m) => m?.role === 'assistant').length;
  if (turns === 0) {
    return {
      ...stream,
      text: 'First I record the effect and look at the workspace.',
      toolCalls: [
        { id: `${runId}-effect`, name: 'recordEffect', arguments: { runId, label: 'effect' } },
        { id: `${runId}-list`, name: 'listFiles', arguments: { path: '.' } },
      ],
    };
  }
  if (turns === 1) {
    return { ...stream, text: `Now I read ${CHAOS_FILE}.`, toolCalls: [{ id: `${runId}-read`, name: 'readFile', arguments: { path: CHAOS_FILE } }] };
  }
  // Built from what the readFile call returned, so a lost or wrong tool result gives a wrong answer.
  const read = (request.messages as any[]).find((m) => m?.role === 'tool' && m.tool_call_id === `${runId}-read`);
  return { ...stream, text: expectedAnswer(token, typeof read?.content === 'string' ? read.content : '(no readFile result)') };
}
