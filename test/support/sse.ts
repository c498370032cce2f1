/** One Server-Sent Events message as the gateway writes it: an event with its id and JSON data, or a comment. */
export interface SseMessage {
  event?: string;
  id?: string;
  data?: any;
  comment?: string;
}

/**
 * Reads an SSE response until it closes or `stop` says so (then cancels it); every message, comments included.
 * `pause` runs before each read (a slow reader).
 */
export async function readSse(res: Response, stop: (m: SseMessage) => boolean = () => false, pause?: () => Promise<void>): Promise<SseMessage[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const messages: SseMessage[] = [];
  let buffer = '';
  for (;;) {
    await pause?.();
    const { value, done } = await reader.read();
    if (done) return messages;
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const message: SseMessage = {};
      for (const line of buffer.slice(0, end).split('\n')) {
        const [, field, value] = /^([^:]*):? ?(.*)$/.exec(line)!;
        if (field === '') message.comment = value;
        else if (field === 'data') message.data = JSON.parse(value);
        else if (field === 'event' || field === 'id') message[field] = value;
      }
      buffer = buffer.slice(end + 2);
      messages.push(message);
      if (stop(message)) {
        await reader.cancel();
        return messages;
      }
    }
  }
}
