// Benchmark peer for figure (e): LangGraph.js streaming a run's tokens in its `custom` stream mode (the node hands each
// delta to `config.writer`), with the SQLite checkpointer, served to any number of watchers over SSE by this process:
// POST /runs {prompt} starts a run; GET /runs/:id/stream replays what the run streamed so far, then the rest, then
// `event: end`. A LangGraph.js application has no fan-out of its own, so this is the plain one a user would write.
// Config comes from BENCH_LANGGRAPH_STREAM (JSON: port, modelUrl, dbFile).
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import OpenAI from 'openai';

const config = JSON.parse(process.env.BENCH_LANGGRAPH_STREAM ?? '{}');
const openai = new OpenAI({ baseURL: config.modelUrl, apiKey: 'bench' });

const State = Annotation.Root({ messages: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });

async function agent(state, runConfig) {
  const stream = await openai.chat.completions.create({ model: 'bench', messages: state.messages, stream: true });
  let text = '';
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta?.content ?? '';
    if (!delta) continue;
    text += delta;
    runConfig.writer?.(delta);
  }
  return { messages: [{ role: 'assistant', content: text }] };
}

const graph = new StateGraph(State)
  .addNode('agent', agent)
  .addEdge(START, 'agent')
  .addEdge('agent', END)
  .compile({ checkpointer: SqliteSaver.fromConnString(config.dbFile) });

/** runId -> what it streamed, its open watchers, whether it ended. */
const runs = new Map();

const send = (res, event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);

async function run(runId, prompt) {
  const r = runs.get(runId);
  try {
    const stream = await graph.stream({ messages: [{ role: 'user', content: prompt }] }, { configurable: { thread_id: runId }, streamMode: 'custom', durability: 'sync' });
    for await (const delta of stream) {
      r.chunks.push(delta);
      for (const res of r.watchers) send(res, 'custom', delta);
    }
  } catch (err) {
    console.error(err);
  }
  r.ended = true;
  for (const res of r.watchers) {
    send(res, 'end', {});
    res.end();
  }
}

createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/runs') {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const runId = randomUUID();
      runs.set(runId, { chunks: [], watchers: new Set(), ended: false });
      void run(runId, JSON.parse(body).prompt);
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ runId }));
    });
    return;
  }
  const m = /^\/runs\/([^/]+)\/stream$/.exec(req.url ?? '');
  const r = m && runs.get(m[1]);
  if (!r) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.socket?.setNoDelay(true);
  for (const delta of r.chunks) send(res, 'custom', delta);
  if (r.ended) {
    send(res, 'end', {});
    return res.end();
  }
  r.watchers.add(res);
  res.on('close', () => r.watchers.delete(res));
}).listen(config.port, '127.0.0.1');
