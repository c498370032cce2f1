#!/usr/bin/env node
/**
 * The HTTP gateway process: `npm run gateway`. GATEWAY_PORT (8080), GATEWAY_HOST (127.0.0.1), GATEWAY_TOKEN
 * (required unless GATEWAY_INSECURE=1), GATEWAY_CONTROL_TIMEOUT_MS (10000), GATEWAY_CORS_ORIGINS (none), GATEWAY_JWKS_URL,
 * GATEWAY_JWT_ISSUER, GATEWAY_JWT_AUDIENCE, GATEWAY_JWT_TENANT_CLAIM, GATEWAY_JWT_ROLES_CLAIM (signed identities), and the TEMPORAL_* settings of
 * `AgentClient.connect`; AGENT_STREAM_REDIS_URL (the stream channel; unset: the in-memory hub, which workers on this
 * host publish to by default, whatever the port, as the gateway announces itself in AGENT_RUNTIME_DIR; others with
 * AGENT_STREAM_URL).
 */
import { AgentClient } from '../client';
import type { AddressInfo } from 'node:net';
import { gatewaySettings, streamSettings, temporalSettings } from '../config';
import { buildGateway } from '../gateway';
import { MemoryHub, RedisChannel, type StreamChannel } from '../stream';
import { announceGateway } from '../stream/discovery';

async function main(): Promise<void> {
  const settings = gatewaySettings(process.env);
  if (settings.token === null) console.warn('GATEWAY_INSECURE=1: the gateway accepts requests without a token');
  const { redisUrl } = streamSettings(process.env);
  let reported = false;
  const onError = (err: Error) => {
    if (!reported) console.warn(`stream channel (redis): ${err.message}; streams poll the state until it is back`);
    reported = true;
  };
  // Redis when configured; else the embedded hub, which workers on this host publish to by default.
  const stream: StreamChannel = redisUrl ? RedisChannel.open({ url: redisUrl, onError }) : new MemoryHub();
  const agents = await AgentClient.connect();
  const app = buildGateway({ agents, token: settings.token, controlTimeoutMs: settings.controlTimeoutMs, corsOrigins: settings.corsOrigins, jwt: settings.jwt, logger: true, stream });
  let withdraw: () => void = () => undefined;
  const stop = async () => {
    withdraw();
    await app.close();
    await stream.close();
    await agents.close();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stop().catch((err: unknown) => {
        console.error(err);
        process.exitCode = 1;
      });
    });
  }
  try {
    await app.listen({ port: settings.port, host: settings.host });
  } catch (err) {
    await agents.close();
    throw err;
  }
  // Workers of this host left at their defaults find the embedded hub here, on whatever port (stream/discovery.ts).
  if (!redisUrl) {
    const { port } = app.server.address() as AddressInfo;
    const host = ['0.0.0.0', '::', ''].includes(settings.host) ? '127.0.0.1' : settings.host.includes(':') ? `[${settings.host}]` : settings.host;
    withdraw = announceGateway({
      url: `http://${host}:${port}`,
      ...(settings.token ? { token: settings.token } : {}),
      temporalAddress: temporalSettings(process.env).address,
      namespace: agents.client.options.namespace,
      taskQueue: agents.taskQueue,
    });
  }
}

main().catch((err: unknown) => {
  console.error(`gateway: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
