/** Settings from the environment, read in one place. Secrets stay here and in the worker: never in workflow input. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_TASK_QUEUE } from './common/constants';
import { DEFAULT_TEMPORAL_ADDRESS, DEFAULT_TEMPORAL_NAMESPACE, temporalProfile } from './connection';

export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
}

export interface LlmSettings {
  /** Absent: the worker starts the project's scripted model (offline, not a real LLM). */
  baseURL?: string;
  apiKey?: string;
  model?: string;
  /** `LLM_CONTEXT_WINDOW_TOKENS`: the context window of the models the worker calls; unset, the table in common/models.ts. */
  contextWindowTokens?: number;
}

/** Address and namespace follow envconfig (see connection.ts): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, else temporal.toml. */
export function temporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  const profile = temporalProfile(env);
  return {
    address: profile.address || DEFAULT_TEMPORAL_ADDRESS,
    namespace: profile.namespace || DEFAULT_TEMPORAL_NAMESPACE,
    taskQueue: env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}

export function llmSettings(env: NodeJS.ProcessEnv = process.env): LlmSettings {
  const window = env.LLM_CONTEXT_WINDOW_TOKENS?.trim();
  if (window && !(/^\d+$/.test(window) && Number(window) > 0 && Number.isSafeInteger(Number(window)))) {
    throw new Error(`LLM_CONTEXT_WINDOW_TOKENS must be a positive whole number of tokens, got ${JSON.stringify(env.LLM_CONTEXT_WINDOW_TOKENS)}`);
  }
  return {
    baseURL: env.LLM_BASE_URL || undefined,
    apiKey: env.LLM_API_KEY || undefined,
    model: env.LLM_MODEL || undefined,
    ...(window ? { contextWindowTokens: Number(window) } : {}),
  };
}

/** A real endpoint is configured when a key or a base URL is given (local servers such as Ollama need no key). */
export const usesScriptedModel = (llm: LlmSettings): boolean => !llm.apiKey && !llm.baseURL;

export const workspaceDir = (env: NodeJS.ProcessEnv = process.env): string => path.resolve(env.AGENT_WORKSPACE || './workspace');

/** `AGENT_WORKFLOW_BUNDLE_DIR`: prebuilt workflow bundles (`npm run build:workflows`); unset, the worker bundles at boot. */
export const workflowBundleDir = (env: NodeJS.ProcessEnv = process.env): string | undefined => env.AGENT_WORKFLOW_BUNDLE_DIR?.trim() || undefined;

/** The durable ledger of side-effecting tool calls (`AGENT_LEDGER`). */
export const ledgerFile = (env: NodeJS.ProcessEnv = process.env): string => path.resolve(env.AGENT_LEDGER || './.agent/tool-ledger.sqlite');

export interface ClaimCheckSettings {
  /** `AGENT_CLAIM_CHECK`: `off` keeps every payload inline in history. @default true */
  enabled: boolean;
  /** `AGENT_BLOB_DIR`: where large payloads are stored. @default ./.agent/blobs */
  blobDir: string;
  /** `AGENT_CLAIM_CHECK_THRESHOLD`: payloads above this many serialized bytes go to the blob store; unset, the codec's default (32768). */
  thresholdBytes?: number;
}

/** Claim-check codec settings; the worker and every client that reads results must point at the same blob store. */
export function claimCheckSettings(env: NodeJS.ProcessEnv = process.env): ClaimCheckSettings {
  const flag = (env.AGENT_CLAIM_CHECK || 'on').trim().toLowerCase();
  if (!['on', 'off', 'true', 'false', '1', '0'].includes(flag)) {
    throw new Error(`AGENT_CLAIM_CHECK must be on or off, got ${JSON.stringify(env.AGENT_CLAIM_CHECK)}`);
  }
  const threshold = env.AGENT_CLAIM_CHECK_THRESHOLD?.trim();
  if (threshold && !/^\d+$/.test(threshold)) {
    throw new Error(`AGENT_CLAIM_CHECK_THRESHOLD must be a number of bytes, got ${JSON.stringify(env.AGENT_CLAIM_CHECK_THRESHOLD)}`);
  }
  return {
    enabled: !['off', 'false', '0'].includes(flag),
    blobDir: path.resolve(env.AGENT_BLOB_DIR || './.agent/blobs'),
    ...(threshold ? { thresholdBytes: Number(threshold) } : {}),
  };
}

export interface GatewaySettings {
  /** `GATEWAY_PORT`. @default 8080 */
  port: number;
  /** `GATEWAY_HOST`. @default 127.0.0.1 */
  host: string;
  /** `GATEWAY_TOKEN`; `null` only with `GATEWAY_INSECURE=1`. */
  token: string | null;
}

/** HTTP gateway settings; refuses to run without a token unless GATEWAY_INSECURE=1 says so. */
export function gatewaySettings(env: NodeJS.ProcessEnv = process.env): GatewaySettings {
  const port = (env.GATEWAY_PORT || '8080').trim();
  if (!/^\d+$/.test(port) || Number(port) > 65_535) throw new Error(`GATEWAY_PORT must be a port number, got ${JSON.stringify(env.GATEWAY_PORT)}`);
  const token = env.GATEWAY_TOKEN?.trim() || null;
  if (!token && env.GATEWAY_INSECURE !== '1') {
    throw new Error('GATEWAY_TOKEN is required (set GATEWAY_INSECURE=1 to run without authentication, on a trusted network only)');
  }
  return { port: Number(port), host: env.GATEWAY_HOST || '127.0.0.1', token };
}

/** MCP servers as raw JSON, from `AGENT_MCP_SERVERS` (inline) or the file `AGENT_MCP_CONFIG`; validated in activities/tools/mcp.ts. */
export function mcpServersSource(env: NodeJS.ProcessEnv = process.env): { source: string; value: unknown } | undefined {
  const inline = env.AGENT_MCP_SERVERS?.trim();
  const file = env.AGENT_MCP_CONFIG?.trim();
  if (inline && file) throw new Error('set AGENT_MCP_SERVERS or AGENT_MCP_CONFIG, not both');
  const [source, text] = inline ? ['AGENT_MCP_SERVERS', inline] : file ? [`AGENT_MCP_CONFIG (${path.resolve(file)})`, readFileSync(file, 'utf8')] : [];
  if (source === undefined) return undefined;
  try {
    return { source, value: JSON.parse(text!) };
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`);
  }
}

export interface ObservabilitySettings {
  /** `AGENT_TRACING`: `otlp`, `console` or `off`. @default `otlp` when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, else `off` */
  tracing: 'otlp' | 'console' | 'off';
  /** `AGENT_METRICS_PORT`: a port, or host:port, for Prometheus `/metrics`; a bare port binds 0.0.0.0. Unset: no metrics endpoint. */
  metricsBindAddress?: string;
  /** `AGENT_LOG_FORMAT`: `json` for one JSON object per line. @default text */
  logFormat: 'text' | 'json';
  /** `AGENT_LOG_LEVEL`: TRACE, DEBUG, INFO, WARN or ERROR. @default INFO */
  logLevel: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
}

export function observabilitySettings(env: NodeJS.ProcessEnv = process.env): ObservabilitySettings {
  const otlp = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const tracing = (env.AGENT_TRACING?.trim().toLowerCase() || (otlp ? 'otlp' : 'off')) as ObservabilitySettings['tracing'];
  if (!['otlp', 'console', 'off'].includes(tracing)) throw new Error(`AGENT_TRACING must be otlp, console or off, got ${JSON.stringify(env.AGENT_TRACING)}`);
  const port = env.AGENT_METRICS_PORT?.trim();
  if (port && !/^(.+:)?\d{1,5}$/.test(port)) throw new Error(`AGENT_METRICS_PORT must be a port or host:port, got ${JSON.stringify(port)}`);
  const logFormat = (env.AGENT_LOG_FORMAT?.trim().toLowerCase() || 'text') as ObservabilitySettings['logFormat'];
  if (!['text', 'json'].includes(logFormat)) throw new Error(`AGENT_LOG_FORMAT must be text or json, got ${JSON.stringify(env.AGENT_LOG_FORMAT)}`);
  const logLevel = (env.AGENT_LOG_LEVEL?.trim().toUpperCase() || 'INFO') as ObservabilitySettings['logLevel'];
  if (!['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'].includes(logLevel)) throw new Error(`AGENT_LOG_LEVEL must be TRACE, DEBUG, INFO, WARN or ERROR, got ${JSON.stringify(env.AGENT_LOG_LEVEL)}`);
  return {
    tracing,
    ...(port ? { metricsBindAddress: port.includes(':') ? port : `0.0.0.0:${port}` } : {}),
    logFormat,
    logLevel,
  };
}
