/**
 * How a worker left at its defaults finds the gateway of its host, wherever it listens: the gateway process
 * (`npm run gateway`) writes where it is (URL and token) to a file only its user can read, as Jupyter's servers do
 * in their runtime directory, and removes it as it stops. A worker with no `AGENT_STREAM_URL` (and no Redis) reads
 * the files of gateways that serve its Temporal namespace and task queue; without one it tries the default
 * `127.0.0.1:<GATEWAY_PORT or 8080>`, and looks again while that does not answer.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

/** A gateway's file: where it listens, its token, and the runs it serves. */
export const GatewayAnnouncementSchema = z.object({
  url: z.string().url(),
  token: z.string().optional(),
  pid: z.number().int().positive(),
  temporalAddress: z.string(),
  namespace: z.string(),
  taskQueue: z.string(),
  startedAt: z.string(),
});
export type GatewayAnnouncement = z.infer<typeof GatewayAnnouncementSchema>;

/** Where a gateway of the runs of (address, namespace, task queue) is, for a worker of the same. */
export interface GatewayAddress {
  url: string;
  token?: string;
}

/** The Temporal runs a gateway serves and a worker works: they match when all three do. */
export interface ServedRuns {
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
}

/**
 * `AGENT_RUNTIME_DIR`, else `~/.agent/gateways`: the directory of the gateways' files (per user, not per project, so
 * that a worker started from another directory finds them too).
 */
export const gatewayRuntimeDir = (env: NodeJS.ProcessEnv = process.env): string =>
  path.resolve(env.AGENT_RUNTIME_DIR?.trim() || path.join(os.homedir(), '.agent', 'gateways'));

/** `localhost:7233` and `127.0.0.1:7233` are one server. */
const sameAddress = (a: string, b: string) => {
  const norm = (s: string) => s.trim().toLowerCase().replace(/^[a-z]+:\/\//, '').replace(/^(localhost|\[::1\]|::1)(?=:)/, '127.0.0.1');
  return norm(a) === norm(b);
};

/** Whether process `pid` is alive (a gateway that died without removing its file is not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Writes this gateway's file (mode 0600: it holds the token) and returns what removes it; it is removed as the
 * process exits too. The file is written whole or not at all (a worker never reads half of one).
 */
export function announceGateway(announcement: Omit<GatewayAnnouncement, 'pid' | 'startedAt'>, env: NodeJS.ProcessEnv = process.env): () => void {
  const dir = gatewayRuntimeDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `gateway-${process.pid}-${new URL(announcement.url).port || 'default'}.json`);
  const body: GatewayAnnouncement = GatewayAnnouncementSchema.parse({ ...announcement, pid: process.pid, startedAt: new Date().toISOString() });
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, JSON.stringify(body), { mode: 0o600 });
  renameSync(partial, file);
  const remove = () => {
    process.off('exit', remove);
    rmSync(file, { force: true });
  };
  process.on('exit', remove);
  return remove;
}

/**
 * The newest live gateway of the same runs, if one announced itself on this host; files of dead gateways are
 * removed, files that do not parse are ignored.
 */
export function findGateway(runs: ServedRuns, env: NodeJS.ProcessEnv = process.env): GatewayAddress | undefined {
  const dir = gatewayRuntimeDir(env);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith('gateway-') && n.endsWith('.json'));
  } catch {
    return undefined;
  }
  const found: GatewayAnnouncement[] = [];
  for (const name of names) {
    let parsed: ReturnType<typeof GatewayAnnouncementSchema.safeParse>;
    try {
      parsed = GatewayAnnouncementSchema.safeParse(JSON.parse(readFileSync(path.join(dir, name), 'utf8')));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const a = parsed.data;
    if (!alive(a.pid)) {
      rmSync(path.join(dir, name), { force: true });
      continue;
    }
    if (a.namespace === runs.namespace && a.taskQueue === runs.taskQueue && sameAddress(a.temporalAddress, runs.temporalAddress)) found.push(a);
  }
  const newest = found.sort((x, y) => y.startedAt.localeCompare(x.startedAt))[0];
  return newest ? { url: newest.url, ...(newest.token ? { token: newest.token } : {}) } : undefined;
}

/** A gateway's base URL (no trailing slash) and the headers of a request to it, with its token. */
export interface GatewayRequest {
  base: string;
  headers: Record<string, string>;
}

/**
 * Where the next request to the gateway goes: a fixed gateway (its URL and the token given), or one looked up at each
 * request (`discoveredGateway`: it may move). `json` adds the content type of a JSON body.
 */
export function gatewayRequests(where: string | (() => GatewayAddress), token?: string): (json: boolean) => GatewayRequest {
  const locate: () => GatewayAddress = typeof where === 'function' ? where : () => ({ url: where, token });
  return (json) => {
    const { url, token: bearer } = locate();
    return { base: url.replace(/\/+$/, ''), headers: { ...(json ? { 'content-type': 'application/json' } : {}), ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) } };
  };
}

/** How often a worker at its defaults looks for its gateway again: a gateway started after it is found this soon. */
export const LOOK_AGAIN_MS = 2_000;

/**
 * Where a worker at its defaults publishes: the gateway found for its runs, else `fallback`, looked up again at
 * most every `LOOK_AGAIN_MS` (a gateway that starts, moves or stops is followed without a restart).
 */
export function discoveredGateway(runs: ServedRuns, fallback: GatewayAddress, env: NodeJS.ProcessEnv = process.env): () => GatewayAddress {
  let current = fallback;
  let lookedAt = -Infinity;
  return () => {
    const now = Date.now();
    if (now - lookedAt >= LOOK_AGAIN_MS) {
      lookedAt = now;
      current = findGateway(runs, env) ?? fallback;
    }
    return current;
  };
}
