// Benchmark peer: LangGraph.js with its SQLite checkpointer. A two-node graph (agent -> tools -> agent ...) whose
// state is the OpenAI message list; the agent node makes the same streaming call as the floor and the product.
// Runs in its own process from bench/peers/node_modules. Config comes from BENCH_LANGGRAPH (JSON).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import OpenAI from 'openai';
import { serve } from './serve.mjs';

const config = JSON.parse(process.env.BENCH_LANGGRAPH ?? '{}');
const checkpointer = SqliteSaver.fromConnString(config.dbFile);

// The tool definition every system sends (READ_FILE_TOOL in bench/lib/workload.ts), passed in by the driver.
const READ_FILE_TOOL = config.tool;

const State = Annotation.Root({
  messages: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function buildGraph(openai, workspace) {
  async function agent(state) {
    const stream = await openai.chat.completions.create({
      model: config.model,
      messages: state.messages,
      tools: [READ_FILE_TOOL],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const calls = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.delta?.content ?? '';
        for (const tc of choice.delta?.tool_calls ?? []) {
          const call = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
          if (tc.id) call.id = tc.id;
          call.name += tc.function?.name ?? '';
          call.arguments += tc.function?.arguments ?? '';
        }
      }
    }
    const message = { role: 'assistant', content: text || null };
    if (calls.length) message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    return { messages: [message] };
  }

  async function tools(state) {
    const last = state.messages[state.messages.length - 1];
    const results = await Promise.all(
      last.tool_calls.map(async (c) => ({ role: 'tool', tool_call_id: c.id, content: await readFile(path.join(workspace, JSON.parse(c.function.arguments).path), 'utf8') })),
    );
    return { messages: results };
  }

  return new StateGraph(State)
    .addNode('agent', agent)
    .addNode('tools', tools)
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? 'tools' : END))
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

const promptOf = (runId, steps) => `bench run ${runId} steps ${steps}: read the files, one per step, then say done.`;

async function runAll({ runs, modelUrl, workspace }, resume) {
  const openai = new OpenAI({ baseURL: modelUrl, apiKey: 'bench', timeout: 10 * 60_000 }); // the client's default retries
  const graph = buildGraph(openai, workspace);
  const started = Date.now();
  const results = await Promise.all(
    runs.map(async ({ runId, steps }) => {
      const input = resume ? null : { messages: [{ role: 'system', content: config.system }, { role: 'user', content: promptOf(runId, steps) }] };
      try {
        await graph.invoke(input, { configurable: { thread_id: runId }, recursionLimit: 2 * steps + 10, durability: config.durability });
        return { runId, ok: true, endedAt: Date.now() };
      } catch (err) {
        return { runId, ok: false, error: String(err), endedAt: Date.now() };
      }
    }),
  );
  return { started, results };
}

serve({
  runs: (msg) => runAll(msg, false),
  /** Carries on the runs from their last checkpoints, as a restarted process would. */
  resume: (msg) => runAll(msg, true),
  /** Checkpoint and write bytes of one thread, by superstep (the checkpoint's metadata.step). */
  bytes: ({ threadId }) => {
    const db = checkpointer.db;
    const steps = new Map();
    const stepOf = new Map();
    let totalBytes = 0;
    let rows = 0;
    let largest = 0;
    const add = (step, bytes) => {
      steps.set(step, (steps.get(step) ?? 0) + bytes);
      totalBytes += bytes;
      rows++;
      largest = Math.max(largest, bytes);
    };
    for (const row of db.prepare('SELECT checkpoint_id, length(checkpoint) + length(metadata) AS bytes, metadata FROM checkpoints WHERE thread_id = ?').all(threadId)) {
      const step = JSON.parse(Buffer.from(row.metadata).toString('utf8')).step;
      stepOf.set(row.checkpoint_id, step);
      add(step, row.bytes);
    }
    // A write belongs to the superstep that runs from its checkpoint, i.e. the next one.
    for (const row of db.prepare('SELECT checkpoint_id, length(value) + length(channel) + length(task_id) AS bytes FROM writes WHERE thread_id = ?').all(threadId)) {
      add((stepOf.get(row.checkpoint_id) ?? -1) + 1, row.bytes);
    }
    return { bySuperstep: [...steps.entries()].sort((a, b) => a[0] - b[0]), totalBytes, rows, largest };
  },
});
