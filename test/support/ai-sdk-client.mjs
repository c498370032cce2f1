// The AI SDK's own client (ESM only, so jest runs it in a child process): DefaultChatTransport.reconnectToStream
// GETs a run's UI message stream, readUIMessageStream builds the message. Prints the last message and the chunks as JSON.
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const { baseUrl, runId, headers } = JSON.parse(process.argv[2]);
const transport = new DefaultChatTransport({
  api: `${baseUrl}/v1/runs`,
  prepareReconnectToStreamRequest: ({ id }) => ({ api: `${baseUrl}/v1/runs/${encodeURIComponent(id)}/ui-message-stream`, headers }),
});
const stream = await transport.reconnectToStream({ chatId: runId });
const chunks = [];
let message;
let error;
const tee = stream.pipeThrough(new TransformStream({ transform: (c, ctl) => (chunks.push(c), ctl.enqueue(c)) }));
for await (const m of readUIMessageStream({ stream: tee, onError: (e) => (error = String(e)) })) message = m;
process.stdout.write(JSON.stringify({ message, chunks, error }));
