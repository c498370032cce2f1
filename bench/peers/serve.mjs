// The child side of bench/lib/ipc.ts for the peers' plain JavaScript (they run from their own node_modules).
export function serve(handlers) {
  process.on('message', (msg) => {
    const reply = (body) => process.send?.({ id: msg.id, ...body });
    const handler = handlers[msg?.type];
    if (!handler) return reply({ ok: false, error: `no handler for ${msg?.type}` });
    Promise.resolve()
      .then(() => handler(msg))
      .then(
        (value) => reply({ ok: true, value }),
        (err) => reply({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ type: 'ready' });
}
