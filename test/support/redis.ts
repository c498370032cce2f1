/** A real redis-server on a free port, for the tests of the stream channel and the fleet budget. */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort } from '../../scripts/lib/free-port';

export interface RedisHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export async function startRedis(port?: number): Promise<RedisHandle> {
  const p = port ?? (await freePort());
  const proc: ChildProcess = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const sock = net.connect(p, '127.0.0.1');
      sock.once('connect', () => (sock.destroy(), resolve(true)));
      sock.once('error', () => resolve(false));
    });
    if (up) break;
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start on port ${p} (is it installed? apt-get install redis-server)`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${p}`,
    port: p,
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}
