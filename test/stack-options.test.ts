/** The stack's options from the environment: ports moved by STACK_PORT_OFFSET, kept below the server's smallint limit. */
import { DEFAULT_PORTS, stackOptionsFromEnv } from '../scripts/lib/stack/stack';

test('STACK_PORT_OFFSET adds the offset to every default port', () => {
  const { ports } = stackOptionsFromEnv({ STACK_PORT_OFFSET: '1000' });
  for (const [name, port] of Object.entries(DEFAULT_PORTS)) expect(ports[name as keyof typeof ports]).toBe(port + 1000);
});

test('TEMPORAL_PORT and STACK_POSTGRES_PORT still win over the offset', () => {
  const { ports } = stackOptionsFromEnv({ STACK_PORT_OFFSET: '1000', TEMPORAL_PORT: '17233', STACK_POSTGRES_PORT: '25432' });
  expect(ports).toMatchObject({ frontend: 17233, postgres: 25432, history: DEFAULT_PORTS.history + 1000 });
});

test('an offset that is not a whole number, or that moves a port past the smallint limit, is refused by name', () => {
  expect(() => stackOptionsFromEnv({ STACK_PORT_OFFSET: 'ten' })).toThrow(/STACK_PORT_OFFSET must be a whole number/);
  expect(() => stackOptionsFromEnv({ STACK_PORT_OFFSET: '1.5' })).toThrow(/STACK_PORT_OFFSET must be a whole number/);
  expect(() => stackOptionsFromEnv({ STACK_PORT_OFFSET: '-7000' })).toThrow(/STACK_PORT_OFFSET=-7000 moves frontendMembership to -67/);
  expect(() => stackOptionsFromEnv({ STACK_PORT_OFFSET: '26000' })).toThrow(/moves postgres to 81432, frontend to 33233, .*below 32768/);
  expect(() => stackOptionsFromEnv({ TEMPORAL_PORT: '40000' })).toThrow(/TEMPORAL_PORT must be a port number up to 32767/);
});
