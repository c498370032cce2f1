/** A gateway with the embedded hub and a worker publishing to it over HTTP, as the Quick start runs them. */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AgentClient } from '../../src/client';
import { buildGateway } from '../../src/gateway';
import { httpTarget, liveStream, MemoryHub, type PublishTarget } from '../../src/stream';
import { startAgentHarness, type AgentHarness } from './agent-harness';

export interface StreamingGateway {
  h: AgentHarness;
  app: FastifyInstance;
  baseUrl: string;
  close(): Promise<void>;
}

export async function startStreamingGateway(token: string): Promise<StreamingGateway> {
  let publishTo: PublishTarget | undefined;
  const stream = liveStream({ publish: (id, e) => publishTo!.publish(id, e) }, { warn: () => undefined, info: () => undefined });
  const h = await startAgentHarness(undefined, { stream });
  const app = buildGateway({ agents: new AgentClient(h.env.client, h.taskQueue), token, heartbeatMs: 200, pollIntervalMs: 100, stream: new MemoryHub() });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  publishTo = httpTarget(baseUrl, token);
  return {
    h,
    app,
    baseUrl,
    async close() {
      await app.close();
      await h.close();
    },
  };
}
