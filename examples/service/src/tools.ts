/** The service's own tool: the model calls it by name, the worker runs it as a Temporal activity. */
import { defineTool } from 'durable-agent-worker';
import { z } from 'zod';

const FORECASTS: Record<string, string> = { paris: 'sunny, 21 °C', oslo: 'snow, -3 °C', lima: 'overcast, 17 °C' };

export const getWeather = defineTool({
  name: 'getWeather',
  description: 'The weather today in a city.',
  parameters: z.object({ city: z.string().describe('A city name, e.g. Paris') }),
  // Reads only: no idempotency ledger needed, and it may run again on a retry.
  sideEffects: false,
  timeoutMs: 10_000,
  async execute({ city }) {
    return FORECASTS[city.trim().toLowerCase()] ?? `no forecast for ${city}`;
  },
});
