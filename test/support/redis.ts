/** A real redis-server for the stream tests, on a free port, without persistence. */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { waitFor } from './agent-harness';

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

export async function startRedis(port: number): Promise<ChildProcess> {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await waitFor(
    () =>
      new Promise<true | undefined>((resolve) => {
        const sock = connect(port, '127.0.0.1');
        sock.once('connect', () => (sock.destroy(), resolve(true)));
        sock.once('error', () => resolve(undefined));
      }),
    10_000,
    'redis-server',
  );
  return proc;
}
