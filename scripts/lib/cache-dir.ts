/**
 * Where builds that outlive a clone are kept (CI clones afresh, a machine keeps them):
 * `${XDG_CACHE_HOME:-~/.cache}/durable-agent-worker/<parts>`.
 */
import os from 'node:os';
import path from 'node:path';

export const projectCacheDir = (env: NodeJS.ProcessEnv, ...parts: string[]): string =>
  path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'durable-agent-worker', ...parts);
