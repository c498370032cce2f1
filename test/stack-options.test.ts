/**
 * The stack's options from the environment (ports moved by STACK_PORT_OFFSET, kept below the server's smallint limit,
 * TLS modes), and docker-compose.yml kept equivalent to it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_PORTS, stackOptionsFromEnv } from '../scripts/lib/stack/stack';
import { TEMPORAL_SERVER_VERSION } from '../scripts/lib/stack/temporal-server-build';
import { TEMPORAL_UI_VERSION } from '../scripts/lib/stack/temporal-ui-build';
import { tlsModeFrom } from '../scripts/lib/stack/tls';

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

test('--tls, --mtls and STACK_TLS choose the TLS mode; anything else is refused by name', () => {
  expect(tlsModeFrom([], {})).toBe('off');
  expect(tlsModeFrom(['--tls'], {})).toBe('tls');
  expect(tlsModeFrom(['--mtls'], { STACK_TLS: 'off' })).toBe('mtls');
  expect(tlsModeFrom([], { STACK_TLS: '1' })).toBe('tls');
  expect(tlsModeFrom([], { STACK_TLS: 'mtls' })).toBe('mtls');
  expect(() => tlsModeFrom([], { STACK_TLS: 'yes please' })).toThrow(/STACK_TLS must be tls \(or 1\), mtls, or off, got "yes please"/);
});

test('docker-compose.yml runs what the stack runs: the same server and UI versions, Redis, and the stream on the worker and the gateway', () => {
  const compose = readFileSync(path.join(__dirname, '..', 'docker-compose.yml'), 'utf8');
  const service = (name: string) => new RegExp(`\\n  ${name}:\\n([\\s\\S]*?)(?=\\n  [a-z-]+:\\n|\\nvolumes:)`).exec(compose)?.[1] ?? '';
  expect(compose).toContain(`image: temporalio/server:${TEMPORAL_SERVER_VERSION}`);
  expect(compose).toContain(`image: temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
  expect(compose).toContain(`image: temporalio/ui:${TEMPORAL_UI_VERSION}`);
  expect(service('redis')).toMatch(/--appendonly", "yes"/);
  expect(compose).toMatch(/AGENT_STREAM_REDIS_URL: redis:\/\/redis:6379/);
  for (const name of ['worker', 'gateway']) expect(service(name)).toMatch(/<<: \[\*agent-env, \*stream-env\]/);
});
