/**
 * How a worker at its defaults finds its host's gateway (src/stream/discovery.ts): the files gateways leave in
 * AGENT_RUNTIME_DIR, read by the runs they serve; a dead gateway's file is removed, a broken one ignored.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { announceGateway, discoveredGateway, findGateway, LOOK_AGAIN_MS } from '../src/stream/discovery';

let dir: string;
let env: NodeJS.ProcessEnv;
const runs = { temporalAddress: 'localhost:7233', namespace: 'default', taskQueue: 'agent' };

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-discovery-'));
  env = { AGENT_RUNTIME_DIR: dir };
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A pid no process has: one that just exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid;

test('a gateway of the same runs is found, with its token; 127.0.0.1 and localhost are one server; other queues and namespaces are not', () => {
  expect(findGateway(runs, env)).toBeUndefined();
  const withdraw = announceGateway({ url: 'http://127.0.0.1:18088', token: 'secret', temporalAddress: '127.0.0.1:7233', namespace: 'default', taskQueue: 'agent' }, env);
  expect(findGateway(runs, env)).toEqual({ url: 'http://127.0.0.1:18088', token: 'secret' });
  expect(findGateway({ ...runs, taskQueue: 'other' }, env)).toBeUndefined();
  expect(findGateway({ ...runs, namespace: 'other' }, env)).toBeUndefined();
  expect(findGateway({ ...runs, temporalAddress: 'localhost:7234' }, env)).toBeUndefined();
  withdraw();
  expect(findGateway(runs, env)).toBeUndefined();
  expect(readdirSync(dir)).toEqual([]);
});

test('a dead gateway\'s file is removed, a file that does not parse is ignored, the newest live one wins', () => {
  const stale = { url: 'http://127.0.0.1:9999', pid: deadPid(), temporalAddress: 'localhost:7233', namespace: 'default', taskQueue: 'agent', startedAt: '2099-01-01T00:00:00.000Z' };
  writeFileSync(path.join(dir, 'gateway-1-9999.json'), JSON.stringify(stale));
  writeFileSync(path.join(dir, 'gateway-2-1.json'), '{"url": 3');
  writeFileSync(path.join(dir, 'gateway-3-2.json'), JSON.stringify({ ...stale, pid: process.pid, url: 'not a url' }));
  writeFileSync(path.join(dir, 'gateway-4-3.json'), JSON.stringify({ ...stale, pid: process.pid, url: 'http://127.0.0.1:7001', startedAt: '2020-01-01T00:00:00.000Z' }));
  writeFileSync(path.join(dir, 'gateway-5-4.json'), JSON.stringify({ ...stale, pid: process.pid, url: 'http://127.0.0.1:7002', startedAt: '2021-01-01T00:00:00.000Z' }));
  expect(findGateway(runs, env)).toEqual({ url: 'http://127.0.0.1:7002' });
  expect(readdirSync(dir).sort()).toEqual(['gateway-2-1.json', 'gateway-3-2.json', 'gateway-4-3.json', 'gateway-5-4.json']);
});

test('a worker\'s locator falls back to the default, and follows a gateway that starts later, within LOOK_AGAIN_MS', () => {
  jest.useFakeTimers({ now: 1_000_000 });
  try {
    const locate = discoveredGateway(runs, { url: 'http://127.0.0.1:8080', token: 'mine' }, env);
    expect(locate()).toEqual({ url: 'http://127.0.0.1:8080', token: 'mine' });
    const withdraw = announceGateway({ url: 'http://127.0.0.1:18088', temporalAddress: 'localhost:7233', namespace: 'default', taskQueue: 'agent' }, env);
    // Looked up at most every LOOK_AGAIN_MS: not every publish reads the directory.
    expect(locate().url).toBe('http://127.0.0.1:8080');
    jest.advanceTimersByTime(LOOK_AGAIN_MS);
    expect(locate()).toEqual({ url: 'http://127.0.0.1:18088' });
    withdraw();
    jest.advanceTimersByTime(LOOK_AGAIN_MS);
    expect(locate().url).toBe('http://127.0.0.1:8080');
  } finally {
    jest.useRealTimers();
  }
});
