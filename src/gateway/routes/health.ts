/**
 * `GET /v1/health`: which workers of the task queue the gateway hears from. Temporal lists the workers polling the
 * queue (DescribeTaskQueue); the channel, those that said hello (every 10 s, `POST /internal/v1/workers` or Redis). A
 * worker that polls but is silent cannot publish its runs' text here: their streams are degraded.
 */
import type { FastifyInstance } from 'fastify';
import { tsToDate } from '../../common/proto-time';
import type { HearsWorkers } from '../../stream/channel';
import { MemoryHub } from '../../stream/hub';
import { taskQueuePollers } from '../../client/pollers';
import type { GatewayContext } from '../context';
import { answer, GatewayHealthSchema } from '../responses';

/** A worker that said hello this recently publishes (it says it every 10 s). */
export const HEARD_WITHIN_MS = 30_000;
/** A poller seen by Temporal this recently is a worker of the queue (a long poll lasts a minute). */
const POLLED_WITHIN_MS = 120_000;

const hearsWorkers = (c: unknown): c is HearsWorkers => typeof (c as Partial<HearsWorkers> | undefined)?.heard === 'function';

export function registerHealthRoute(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/v1/health', async () => {
    const { client, taskQueue } = ctx.agents;
    const now = Date.now();
    const polled = new Map<string, number>();
    for (const p of await taskQueuePollers(client, taskQueue, 'activity')) {
      const at = tsToDate(p.lastAccessTime)?.getTime() ?? 0;
      if (p.identity && at >= now - POLLED_WITHIN_MS) polled.set(p.identity, Math.max(at, polled.get(p.identity) ?? 0));
    }
    const channel = ctx.stream;
    const heard = hearsWorkers(channel) ? await channel.heard() : new Map<string, number>();
    const identities = [...new Set([...polled.keys(), ...[...heard].filter(([, at]) => at >= now - HEARD_WITHIN_MS).map(([id]) => id)])].sort();
    const workers = identities.map((identity) => {
      const polledAt = polled.get(identity);
      const helloAt = heard.get(identity);
      return {
        identity,
        lastPolledAt: polledAt ? new Date(polledAt).toISOString() : null,
        lastHelloAt: helloAt ? new Date(helloAt).toISOString() : null,
        publishing: helloAt !== undefined && helloAt >= now - HEARD_WITHIN_MS,
      };
    });
    const silent = workers.filter((w) => !w.publishing && w.lastPolledAt).map((w) => w.identity);
    const kind = !channel ? 'none' : channel instanceof MemoryHub ? 'hub' : 'redis';
    return answer(GatewayHealthSchema, { status: silent.length || !channel ? 'degraded' : 'ok', channel: kind, taskQueue, workers, silent });
  });
}
