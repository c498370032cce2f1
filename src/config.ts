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
