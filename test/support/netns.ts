/**
 * A host of its own for a worker: a network namespace joined to this one by a veth pair on a private /30
 * (10.231.N.0/30), and TCP forwarders on the host end to the stack's listeners, which bind 127.0.0.1 only (no
 * iptables here to DNAT to loopback). Deleting the namespace with everything in it is a lost host; setting its end
 * of the veth down is a partition. Linux only, as root.
 */
import { execFileSync } from 'node:child_process';
import net from 'node:net';

/** Every namespace and host-side veth these tests create starts with this, so a stale one is found and removed. */
export const NETNS_PREFIX = 'daw-';

const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

export interface Host {
  /** The namespace's name. */
  ns: string;
  /** The veth end inside the namespace (set down for a partition). */
  nsVeth: string;
  /** The address the namespace reaches this host at; the forwarders listen there. */
  hostAddress: string;
  nsAddress: string;
}

/** Creates namespace `daw-<n>` with veths `daw-<n>h` (here) and `daw-<n>n` (inside), on 10.231.<n>.0/30. */
export function addHost(n: number): Host {
  const ns = `${NETNS_PREFIX}${n}`;
  const host: Host = { ns, nsVeth: `${ns}n`, hostAddress: `10.231.${n}.1`, nsAddress: `10.231.${n}.2` };
  const hostVeth = `${ns}h`;
  ip('netns', 'add', ns);
  ip('link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', host.nsVeth);
  ip('link', 'set', host.nsVeth, 'netns', ns);
  ip('addr', 'add', `${host.hostAddress}/30`, 'dev', hostVeth);
  ip('link', 'set', hostVeth, 'up');
  ip('-n', ns, 'addr', 'add', `${host.nsAddress}/30`, 'dev', host.nsVeth);
  ip('-n', ns, 'link', 'set', host.nsVeth, 'up');
  ip('-n', ns, 'link', 'set', 'lo', 'up');
  return host;
}

/** kill -9 of every process in the namespace, then the namespace (and with it both veth ends). */
export function deleteHost(ns: string): void {
  let pids: number[] = [];
  try {
    pids = ip('netns', 'pids', ns).split('\n').filter(Boolean).map(Number);
  } catch {
    return; // no such namespace
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  ip('netns', 'del', ns);
}

/** Removes every namespace and host-side veth with our prefix, left by a run that died before its cleanup. */
export function removeStaleHosts(): void {
  for (const line of ip('netns', 'list').split('\n')) {
    const ns = line.split(' ')[0];
    if (ns.startsWith(NETNS_PREFIX)) deleteHost(ns);
  }
  for (const line of ip('-o', 'link', 'show').split('\n')) {
    const name = /^\d+: ([^@:]+)/.exec(line)?.[1];
    if (!name?.startsWith(NETNS_PREFIX)) continue;
    try {
      ip('link', 'del', name);
    } catch {
      // A deleted namespace's veth goes a moment later, on its own.
    }
  }
}

export function setLink(host: Host, state: 'up' | 'down'): void {
  ip('-n', host.ns, 'link', 'set', host.nsVeth, state);
}

/** Forwards connections to `listenHost:port` to 127.0.0.1:port; `close` ends the listener and every connection. */
export async function forward(listenHost: string, port: number): Promise<{ close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, '127.0.0.1');
    track(inbound);
    track(outbound);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    // One side's end or error ends the other, as a closed connection would through a router.
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => inbound.destroy());
    inbound.on('error', () => undefined);
    outbound.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, listenHost, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
