/**
 * Traces in the OpenTelemetry GenAI semantic conventions, as a real OpenTelemetry Collector receives them: a worker
 * configured by the environment (OTEL_EXPORTER_OTLP_ENDPOINT) sends its spans over OTLP/HTTP to a collector process
 * (scripts/otelcol: the collector's OTLP receiver and file exporter), and the test reads what the collector wrote.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentDataConverter, AgentClient } from '../src/client';
import { codecSettings, workerConfig } from '../src/config';
import { startScriptedModel, type ScriptedModel } from '../src/scripted-model';
import { createAgentWorker } from '../src/worker';
import { quietRuntime, waitFor } from './support/agent-harness';
import { testServerAddress } from './support/temporal';
import { freePort } from '../scripts/lib/free-port';
import { ensureOtelcol } from '../scripts/lib/otelcol';

/** A span as the collector's file exporter writes it (OTLP JSON), its attributes flattened. */
interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  service: unknown;
}

/** An OTLP JSON AnyValue as a plain value (int64 comes as a string). */
function valueOf(v: any): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

const attributesOf = (list: any[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

/** Every span in the collector's file: one ExportTraceServiceRequest per line. */
function collected(file: string): CollectedSpan[] {
  if (!existsSync(file)) return [];
  const spans: CollectedSpan[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    for (const rs of JSON.parse(line).resourceSpans ?? []) {
      const service = attributesOf(rs.resource?.attributes)['service.name'];
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind, attributes: attributesOf(s.attributes), service });
      }
    }
  }
  return spans;
}

const SPAN_KIND_INTERNAL = 1;
const SPAN_KIND_CLIENT = 3;

let model: ScriptedModel;
let collector: ChildProcess | undefined;
let collectorLog = '';
let spansFile: string;
let endpoint: string;
let dir: string;

beforeAll(async () => {
  quietRuntime();
  const bin = ensureOtelcol();
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-genai-'));
  spansFile = path.join(dir, 'spans.jsonl');
  const port = await freePort();
  endpoint = `http://127.0.0.1:${port}`;
  // The collector's own telemetry is off: its metrics endpoint would take a fixed port (8888) on a shared machine.
  const config = [
    'receivers:',
    '  otlp:',
    '    protocols:',
    '      http:',
    `        endpoint: 127.0.0.1:${port}`,
    'exporters:',
    '  file:',
    `    path: ${spansFile}`,
    'service:',
    '  telemetry:',
    '    metrics:',
    '      level: none',
    '  pipelines:',
    '    traces:',
    '      receivers: [otlp]',
    '      exporters: [file]',
  ].join('\n');
  writeFileSync(path.join(dir, 'collector.yaml'), config);
  collector = spawn(bin, ['--config', path.join(dir, 'collector.yaml')], { stdio: ['ignore', 'pipe', 'pipe'] });
  collector.stdout!.on('data', (d: Buffer) => (collectorLog += d.toString()));
  collector.stderr!.on('data', (d: Buffer) => (collectorLog += d.toString()));
  // Ready once its receiver answers an (empty) export.
  await waitFor(
    async () => {
      if (collector!.exitCode !== null) throw new Error(`the collector exited (${collector!.exitCode}):\n${collectorLog.slice(-2_000)}`);
      const res = await fetch(`${endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
      return res?.ok ? true : undefined;
    },
    30_000,
    'the collector to receive OTLP',
  );

  model = await startScriptedModel();
  // A tool call, then an answer: two chat spans and one execute_tool span.
  model.register('genai-traced', ({ request }) =>
    request.messages.some((m: any) => m.role === 'tool')
      ? { text: 'The workspace holds notes.txt.', usage: { prompt_tokens: 40, completion_tokens: 7 } }
      : { toolCalls: [{ id: 'call_list', name: 'listFiles', arguments: { path: '.' } }], usage: { prompt_tokens: 30, completion_tokens: 5 } },
  );
}, 60_000);

afterAll(async () => {
  await model?.close();
  if (collector && collector.exitCode === null) {
    collector.kill('SIGTERM');
    await new Promise((resolve) => collector!.once('exit', resolve));
  }
});

test('a run sends chat, execute_tool and invoke_agent spans with gen_ai attributes to a real collector over OTLP', async () => {
  const workspace = path.join(dir, 'ws');
  mkdirSync(workspace);
  writeFileSync(path.join(workspace, 'notes.txt'), 'notes');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    TEMPORAL_ADDRESS: testServerAddress(),
    TEMPORAL_TASK_QUEUE: `genai-${process.pid}-${Date.now()}`,
    LLM_BASE_URL: model.url,
    LLM_API_KEY: 'scripted',
    LLM_MODEL: 'genai-traced',
    AGENT_WORKSPACE: workspace,
    AGENT_LEDGER: path.join(dir, 'ledger.sqlite'),
    AGENT_BLOB_DIR: path.join(dir, 'blobs'),
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: 'genai-test-worker',
  };
  // The OTLP exporter reads its endpoint from the process's environment, as the OpenTelemetry spec has it.
  const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  let workflowId: string;
  let usage: { promptTokens: number; completionTokens: number };
  try {
    const config = workerConfig(env);
    expect(config.observability.tracing).toBe('otlp');
    const agent = await createAgentWorker({ config });
    const running = agent.run();
    const agents = await AgentClient.connect({ address: env.TEMPORAL_ADDRESS, taskQueue: env.TEMPORAL_TASK_QUEUE }, { dataConverter: agentDataConverter(codecSettings(env)) });
    try {
      const run = await agents.start({ prompt: 'What is in the workspace?' });
      workflowId = run.workflowId;
      const result = await run.result();
      expect(result).toMatchObject({ status: 'COMPLETED', answer: 'The workspace holds notes.txt.', toolCalls: 1 });
      usage = result.usage;
    } finally {
      await agents.close();
      // The worker's own tracing flushes its spans as it shuts down.
      agent.shutdown();
      await running;
    }
  } finally {
    if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
  }

  const spans = await waitFor(
    () => {
      // The run's trace: the one its workflow span is in.
      const all = collected(spansFile);
      const run = all.find((s) => s.name === 'RunWorkflow:agentRun' && s.attributes.workflowId === workflowId);
      const trace = all.filter((s) => s.traceId === run?.traceId);
      return trace.filter((s) => s.name.startsWith('chat ')).length === 2 && trace.some((s) => s.name.startsWith('execute_tool ')) ? trace : undefined;
    },
    20_000,
    `the run's spans in the collector's file\n${collectorLog.slice(-1_000)}`,
  );
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['genai-test-worker']));

  // The model calls: `chat {model}` client spans inside their activity's span.
  const chats = spans.filter((s) => s.name === 'chat genai-traced');
  expect(chats).toHaveLength(2);
  for (const chat of chats) {
    expect(chat.kind).toBe(SPAN_KIND_CLIENT);
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'genai-traced',
      'gen_ai.response.model': 'genai-traced',
      'gen_ai.conversation.id': workflowId!,
    });
    expect(byId.get(chat.parentSpanId)?.name).toBe('RunActivity:callModel');
  }
  const answers = chats.map((c) => [c.attributes['gen_ai.response.finish_reasons'], c.attributes['gen_ai.usage.input_tokens'], c.attributes['gen_ai.usage.output_tokens']]);
  expect(answers).toEqual(
    expect.arrayContaining([
      [['tool_calls'], 30, 5],
      [['stop'], 40, 7],
    ]),
  );

  // The tool call: an `execute_tool {tool}` span with the tool's name and the model's call id (listFiles, a pure tool,
  // runs ahead inside the model call that asked for it: its span is a child of that call's chat span).
  const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
  expect(tools).toHaveLength(1);
  expect(tools[0].name).toBe('execute_tool listFiles');
  expect(tools[0].kind).toBe(SPAN_KIND_INTERNAL);
  expect(tools[0].attributes).toMatchObject({ 'gen_ai.tool.name': 'listFiles', 'gen_ai.tool.call.id': 'call_list', 'gen_ai.tool.type': 'function' });
  expect(chats.map((c) => c.spanId)).toContain(tools[0].parentSpanId);

  // The run: the workflow's span is the agent's invocation, with the tokens the run spent.
  const [run] = spans.filter((s) => s.name === 'RunWorkflow:agentRun');
  expect(run.attributes).toMatchObject({
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.id': workflowId!,
    'gen_ai.agent.name': 'agentRun',
    'gen_ai.usage.input_tokens': usage!.promptTokens,
    'gen_ai.usage.output_tokens': usage!.completionTokens,
    'gen_ai.response.model': 'genai-traced',
  });
  expect(usage!).toMatchObject({ promptTokens: 70, completionTokens: 12 });
  expect(run.parentSpanId ? byId.get(run.parentSpanId)?.name : undefined).toBe('StartWorkflow:agentRun');
}, 120_000);
