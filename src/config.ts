/** Settings from the environment, read in one place. Secrets stay here and in the worker: never in workflow input. */
import path from 'node:path';
import { DEFAULT_TASK_QUEUE } from './common/constants';

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
}

export function temporalSettings(env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE,
  };
}

export function llmSettings(env: NodeJS.ProcessEnv = process.env): LlmSettings {
  return { baseURL: env.LLM_BASE_URL || undefined, apiKey: env.LLM_API_KEY || undefined, model: env.LLM_MODEL || undefined };
}

/** A real endpoint is configured when a key or a base URL is given (local servers such as Ollama need no key). */
export const usesScriptedModel = (llm: LlmSettings): boolean => !llm.apiKey && !llm.baseURL;

export const workspaceDir = (env: NodeJS.ProcessEnv = process.env): string => path.resolve(env.AGENT_WORKSPACE || './workspace');

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
