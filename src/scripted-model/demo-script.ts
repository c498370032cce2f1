import { textOf } from './types';
import type { ResponseStep, Script, ScriptedToolCall } from './types';

/**
 * Deterministic policy of the offline demo, written against the built-in tools
 * `listFiles { path }`, `readFile { path }` and `writeFile { path, content }`.
 *
 * Without tools in the request: a plan, a summary or a short generic line, from the request's wording.
 * With tools, from the latest tool result:
 *   none yet         -> listFiles '.'
 *   after listFiles  -> readFile of the first file, preferring .md or .txt; writeFile notes.txt when there is none
 *   after writeFile  -> listFiles '.' again
 *   after readFile   -> final answer naming the file, its first line and its size
 * A call a person rejected, or approved with edited arguments, is answered as such: what was refused, or the file that
 * the edited call read (the approval demo would otherwise claim to have read the file the model asked for).
 */
export const demoScript: Script = ({ request }) => {
  const messages: any[] = Array.isArray(request?.messages) ? request.messages : [];
  const hasTools = Array.isArray(request?.tools) && request.tools.length > 0;
  return hasTools ? nextAction(messages) : answerWithoutTools(messages);
};

/** The demo at a slower pace: each text chunk waits `paceMs`, each tool call `5 * paceMs` before it is sent. */
export const pacedDemoScript = (paceMs: number): Script => (context) => {
  const step = demoScript(context);
  if (!('text' in step) && !('toolCalls' in step)) return step;
  return 'toolCalls' in step && step.toolCalls ? { ...step, firstChunkDelayMs: 5 * paceMs } : { ...step, chunkSize: 6, chunkDelayMs: paceMs };
};

/** Text steps stream slowly so the demo visibly streams. */
const say = (text: string): ResponseStep => ({ text, chunkSize: 6, chunkDelayMs: 25 });
const call = (name: string, args: Record<string, unknown>): ResponseStep => ({ toolCalls: [{ name, arguments: args }] });

export const DEMO_NOTES_FILE = 'notes.txt';

function answerWithoutTools(messages: any[]): ResponseStep {
  switch (intentOf(messages)) {
    case 'review': {
      const answer = textOf(messages.at(-1)?.content).split('Answer:\n')[1]?.trim() ?? '';
      const verdict = answer
        ? { action: 'complete', reason: 'the answer addresses the task', confidence: 80 }
        : { action: 'retry', reason: 'the answer is empty', confidence: 90 };
      return { text: JSON.stringify(verdict) };
    }
    case 'review-tools': {
      const failed = /^\d+\. .*\nError: /m.test(textOf(messages.at(-1)?.content));
      const verdict = failed ? { action: 'retry', reason: 'a tool call failed', confidence: 80 } : { action: 'continue', reason: 'the tool calls succeeded', confidence: 80 };
      return { text: JSON.stringify(verdict) };
    }
    case 'plan':
      return say(
        '1. List the files in the workspace.\n2. Read the most relevant file.\n3. Answer with what the file says.',
      );
    case 'summary': {
      const seen = messages.filter((m) => m?.role !== 'system').length;
      const tools = [...new Set(toolCallsIn(messages).map((c) => c.name))];
      const used = tools.length ? `the assistant used ${tools.join(', ')}` : 'no tools were used';
      return say(`Summary of ${seen} messages: ${used}; the task is still in progress.`);
    }
    default:
      return say('Scripted demo model: no tools were offered, so this is a short generic answer.');
  }
}

/** The last message states the most specific request; system messages are the fallback. */
function intentOf(messages: any[]): 'plan' | 'summary' | 'review' | 'review-tools' | 'other' {
  const system0 = textOf(messages[0]?.role === 'system' ? messages[0].content : '');
  if (/review an assistant's final answer/i.test(system0)) return 'review';
  if (/review the outcome of an assistant's tool calls/i.test(system0)) return 'review-tools';
  const last = textOf(messages.at(-1)?.content);
  if (/summar/i.test(last)) return 'summary';
  if (/\bplan\b/i.test(last)) return 'plan';
  const system = messages.filter((m) => m?.role === 'system').map((m) => textOf(m.content)).join('\n');
  if (/summar/i.test(system)) return 'summary';
  if (/\bplan\b/i.test(system)) return 'plan';
  return 'other';
}

/** How the workflow tells the model a call was rejected (src/machine/core.ts). */
const REJECTED = /^The user rejected this call(?:: (.*)|\.)$/s;

function nextAction(messages: any[]): ResponseStep {
  const last = latestToolResult(messages);
  if (!last) return call('listFiles', { path: '.' });
  const rejected = REJECTED.exec(last.content.trim());
  if (rejected) {
    const target = typeof last.args.path === 'string' ? ` of ${last.args.path}` : '';
    const feedback = rejected[1]?.trim() || last.feedback;
    return say(`You rejected my ${last.call.name}${target}${feedback ? ` ("${feedback}")` : ''}, so I did not run it and have nothing more to report.`);
  }

  switch (last.call.name) {
    case 'listFiles': {
      const file = pickFile(last.content);
      if (file) return call('readFile', { path: joinPath(String(last.args.path ?? '.'), file) });
      const alreadyWrote = toolCallsIn(messages).some((c) => c.name === 'writeFile');
      if (alreadyWrote) return say('The workspace is still empty after writing a notes file, so there is nothing to read.');
      return call('writeFile', { path: DEMO_NOTES_FILE, content: 'Notes created by the scripted demo model.\n' });
    }
    case 'writeFile':
      return call('listFiles', { path: '.' });
    case 'readFile': {
      const path = String(last.args.path ?? 'the file');
      const firstLine = last.content.split(/\r?\n/)[0];
      return say(`I read ${path}. Its first line is "${firstLine}" and it is ${last.content.length} characters long.`);
    }
    default:
      return say(`The last tool I saw was ${last.call.name}; I have nothing more to do.`);
  }
}

interface ToolResult {
  call: ScriptedToolCall;
  args: Record<string, unknown>;
  content: string;
  /** A person's feedback on the call, from the note after the turn's results. */
  feedback?: string;
}

/**
 * The last `tool` message with the assistant tool call it answers; `args` are those the call ran with, which a person
 * may have edited (told in a user message after the results, or, in older runs, at the head of the result).
 */
function latestToolResult(messages: any[]): ToolResult | undefined {
  const index = messages.map((m) => m?.role).lastIndexOf('tool');
  if (index < 0) return undefined;
  const result = messages[index];
  const call = toolCallsIn(messages).find((c) => c.id === result.tool_call_id) ?? { name: 'unknown', arguments: '{}' };
  let content = textOf(result.content);
  const inline = /^\(The user approved this call with edited arguments: (.*)\)\n/.exec(content);
  if (inline) content = content.slice(inline[0].length);
  // The person's decision on the call, one line of the note after the turn's results: `- readFile (call c1): rejected. Feedback: ...`.
  const note = messages
    .slice(index + 1)
    .filter((m) => m?.role === 'user')
    .map((m) => new RegExp(`\\(call ${escapeRegExp(String(call.id))}\\): (?:approved with edited arguments; it ran with (\\{.*?\\})|rejected|approved)\\.(?: Feedback: (.*))?$`, 'm').exec(textOf(m.content)))
    .find(Boolean);
  const ran = note?.[1] ?? inline?.[1];
  return { call, args: parseArgs(ran ?? call.arguments), content, feedback: note?.[2]?.trim() };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function toolCallsIn(messages: any[]): ScriptedToolCall[] {
  return messages
    .filter((m) => m?.role === 'assistant' && Array.isArray(m.tool_calls))
    .flatMap((m) => m.tool_calls)
    .map((c: any) => ({ id: c?.id, name: String(c?.function?.name ?? ''), arguments: String(c?.function?.arguments ?? '') }));
}

function parseArgs(args: ScriptedToolCall['arguments']): Record<string, unknown> {
  if (typeof args !== 'string') return args;
  try {
    const parsed = JSON.parse(args);
    return parsed && typeof parsed === 'object' ? parsed : {};
  } catch {
    return {};
  }
}

/** First listed file (directories end with `/`, notes such as `(empty)` are skipped), preferring a .md or .txt one. */
function pickFile(listing: string): string | undefined {
  const files = listing
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.endsWith('/') && !line.startsWith('('));
  return files.find((f) => /\.(md|txt)$/i.test(f)) ?? files[0];
}

function joinPath(dir: string, file: string): string {
  if (dir === '' || dir === '.' || dir === './') return file;
  return `${dir.replace(/\/+$/, '')}/${file}`;
}
