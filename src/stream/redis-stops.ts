/** The stop relay over Redis pub/sub (`AGENT_STREAM_REDIS_URL`): stream/stops.ts says what it is for. */
import { createClient } from '@redis/client';
import { Listeners, type StopRelay } from './stops';

/** Redis pub/sub on one channel (`<prefix>stops`): a subscriber connection while anyone listens. */
export function redisStopRelay(url: string, keyPrefix = 'agent:'): StopRelay {
  const channel = `${keyPrefix}stops`;
  const options = { url, RESP: 2 as const, disableOfflineQueue: true, socket: { connectTimeout: 2_000, reconnectStrategy: (n: number) => Math.min(100 * 2 ** n, 2_000) } };
  const publisher = createClient(options);
  publisher.on('error', () => undefined);
  let connecting: Promise<unknown> | undefined;
  let subscriber: ReturnType<typeof createClient> | undefined;
  const listeners = new Listeners(
    () => {
      const s = (subscriber = createClient(options));
      s.on('error', () => undefined);
      s.connect()
        .then(() => s.subscribe(channel, (message) => listeners.deliver(safeJson(message))))
        .catch(() => undefined);
    },
    () => {
      subscriber?.destroy();
      subscriber = undefined;
    },
  );
  return {
    announce(stop) {
      connecting ??= publisher.connect().catch(() => (connecting = undefined));
      void connecting.then(() => publisher.publish(channel, JSON.stringify(stop))).catch(() => undefined);
    },
    listen: (onStop) => listeners.add(onStop),
    async close() {
      subscriber?.destroy();
      if (publisher.isOpen) await publisher.close().catch(() => publisher.destroy());
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
