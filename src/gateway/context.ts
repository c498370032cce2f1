/** What every route needs: the agent client, the stream settings, and the requests to cut short on shutdown. */
import type { FastifyReply } from 'fastify';
import type { AgentClient } from '../client';
import type { StreamChannel } from '../stream/channel';
import type { SharedReads, SharedStates } from './shared-state';
import type { StreamTokens } from './stream-token';

export interface GatewayContext {
  agents: AgentClient;
  /** Time between two heartbeat comments on an SSE stream. */
  heartbeatMs: number;
  /** Time between two `state` queries of an SSE stream's watch. */
  pollIntervalMs: number;
  /** How long a control (approval, message, abort, pause, resume) waits for the run to take it. */
  controlTimeoutMs: number;
  /**
   * Long requests (SSE streams, result waits) in flight, each with its end; closing the gateway aborts them and waits
   * for their ends, so that none calls the server after the close (its client may close the connection then).
   */
  inflight: Map<AbortController, Promise<void>>;
  /** Set when the gateway starts closing: a long request that registers after that is aborted at once. */
  closing?: boolean;
  /** Where runs' events are published (src/stream); absent: every stream polls the state. */
  stream?: StreamChannel;
  /** How long a stream waits for a running run's first published event before it polls instead. */
  attachWaitMs?: number;
  /** Issues and checks the `?token=` of event streams (`POST /v1/runs/:id/stream-token`). */
  streamTokens: StreamTokens;
  /** The state reads of polling streams, shared by the watchers of a run. */
  states: SharedStates;
  /** Whether a run's model call cannot publish (live-events.ts asks while the channel is quiet), shared likewise. */
  degradedChecks?: SharedReads<boolean>;
}

/**
 * A signal that aborts when the client goes away or the gateway closes, so that no watch loop or long poll outlives
 * its request. Call `dispose` when the request is done.
 */
export function abortOnClose(ctx: GatewayContext, reply: FastifyReply): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onClose = () => controller.abort(new Error('the client closed the connection'));
  reply.raw.once('close', onClose);
  let ended!: () => void;
  ctx.inflight.set(controller, new Promise<void>((resolve) => (ended = resolve)));
  // A stream that began before the close and registers after it would hold the close open for as long as it lives.
  if (ctx.closing) controller.abort(new Error('the gateway is closing'));
  return {
    signal: controller.signal,
    dispose() {
      reply.raw.off('close', onClose);
      ctx.inflight.delete(controller);
      ended();
    },
  };
}
