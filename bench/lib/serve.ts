/** The child side of `ipc.ts`: answers the driver's requests with `handlers`, then says it is ready. */
export type Handlers = Record<string, (msg: any) => unknown>;

export function serve(handlers: Handlers): void {
  process.on('message', (msg: any) => {
    const handler = handlers[msg?.type];
    const reply = (body: object) => process.send?.({ id: msg.id, ...body });
    if (!handler) return reply({ ok: false, error: `no handler for ${msg?.type}` });
    Promise.resolve()
      .then(() => handler(msg))
      .then(
        (value) => reply({ ok: true, value }),
        (err: unknown) => reply({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  // The driver ends a child by signal or by closing the channel.
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready' });
}

/**
 * A worker child's life: the worker runs until the driver asks it to shut down (it drains), then the connection
 * closes and the process exits.
 */
export async function serveWorker(worker: { run(): Promise<void>; shutdown(): void }, connection: { close(): Promise<void> }): Promise<never> {
  const running = worker.run().finally(() => connection.close());
  serve({
    shutdown: async () => {
      worker.shutdown();
      await running;
    },
  });
  await running;
  process.exit(0);
}
