/**
 * config.ts: every setting a process reads, with its default, and a bad value refused with its variable named before
 * anything starts. Every env here is explicit and has no HOME, so a temporal.toml on this machine cannot leak in.
 */
import path from 'node:path';
import { codecServerSettings, DEFAULT_CODEC_SERVER_ORIGINS, gatewaySettings, streamSettings, workerConfig } from '../src/config';

test('a worker with nothing set: local Temporal, the scripted model, files under the working directory, no extras', () => {
  expect(workerConfig({})).toEqual({
    temporal: { address: 'localhost:7233', namespace: 'default', taskQueue: 'agent-runs' },
    llm: {},
    workspace: path.resolve('workspace'),
    ledgerFile: path.resolve('.agent/tool-ledger.sqlite'),
    memory: { kind: 'sqlite', file: path.resolve('.agent/memory.sqlite') },
    codecs: { claimCheck: { enabled: true, blobDir: path.resolve('.agent/blobs') } },
    retention: { enabled: true, intervalMs: 6 * 3_600_000, graceMs: 24 * 3_600_000 },
    observability: { tracing: 'off', logFormat: 'text', logLevel: 'INFO', serviceName: 'durable-agent-worker' },
  });
});

test('a worker reads each of its variables', () => {
  const key = Buffer.alloc(32, 7).toString('base64');
  const config = workerConfig({
    TEMPORAL_ADDRESS: 'temporal:7233',
    TEMPORAL_NAMESPACE: 'agents',
    TEMPORAL_TASK_QUEUE: 'q',
    TEMPORAL_API_KEY: 'k',
    LLM_BASE_URL: 'http://llm/v1',
    LLM_API_KEY: 'secret',
    LLM_MODEL: 'm',
    LLM_CONTEXT_WINDOW_TOKENS: '8192',
    AGENT_WORKSPACE: '/ws',
    AGENT_LEDGER: '/data/ledger.sqlite',
    AGENT_MEMORY: 'postgres://agent:pw@db:5432/agent',
    AGENT_WORKFLOW_BUNDLE_DIR: ' /bundles ',
    AGENT_CLAIM_CHECK: 'off',
    AGENT_BLOB_DIR: '/data/blobs',
    AGENT_ENCRYPTION_KEYS: `k1:${key}`,
    AGENT_MCP_SERVERS: '[{"name":"x","url":"http://mcp"}]',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
    OTEL_SERVICE_NAME: 'agents-prod',
    AGENT_METRICS_PORT: '9464',
    AGENT_LOG_FORMAT: 'JSON',
    AGENT_LOG_LEVEL: 'warn',
    AGENT_RETENTION: '7d',
    AGENT_RETENTION_INTERVAL: '90m',
    AGENT_RETENTION_GRACE: '2h',
  });
  expect(config).toEqual({
    temporal: { address: 'temporal:7233', namespace: 'agents', taskQueue: 'q', apiKey: 'k', tls: true },
    llm: { baseURL: 'http://llm/v1', apiKey: 'secret', model: 'm', contextWindowTokens: 8192 },
    workspace: '/ws',
    ledgerFile: '/data/ledger.sqlite',
    memory: { kind: 'postgres', url: 'postgres://agent:pw@db:5432/agent' },
    workflowBundleDir: '/bundles',
    codecs: { claimCheck: { enabled: false, blobDir: '/data/blobs' }, encryption: { keys: { k1: Buffer.from(key, 'base64') }, currentKeyId: 'k1' } },
    retention: { enabled: true, retentionMs: 7 * 24 * 3_600_000, intervalMs: 90 * 60_000, graceMs: 2 * 3_600_000 },
    mcpServers: { source: 'AGENT_MCP_SERVERS', value: [{ name: 'x', url: 'http://mcp' }] },
    observability: { tracing: 'otlp', metricsBindAddress: '0.0.0.0:9464', logFormat: 'json', logLevel: 'WARN', serviceName: 'agents-prod' },
  });
});

test('AGENT_RETENTION=off stops the worker\'s sweep', () => {
  expect(workerConfig({ AGENT_RETENTION: 'off' }).retention).toEqual({ enabled: false, intervalMs: 6 * 3_600_000, graceMs: 24 * 3_600_000 });
});

test.each([
  [{ LLM_CONTEXT_WINDOW_TOKENS: '8k' }, /^LLM_CONTEXT_WINDOW_TOKENS must be a positive whole number/],
  [{ SCRIPTED_MODEL_PACE_MS: 'slow' }, /^SCRIPTED_MODEL_PACE_MS must be a whole number of milliseconds/],
  [{ AGENT_CLAIM_CHECK: 'maybe' }, /^AGENT_CLAIM_CHECK must be on or off/],
  [{ AGENT_RETENTION: 'a week' }, /^AGENT_RETENTION must be a duration such as 30m, 36h or 7d/],
  [{ AGENT_CLAIM_CHECK_THRESHOLD: '32k' }, /^AGENT_CLAIM_CHECK_THRESHOLD must be a number of bytes/],
  [{ AGENT_ENCRYPTION_KEY_ID: 'k1' }, /^AGENT_ENCRYPTION_KEY_ID is set but AGENT_ENCRYPTION_KEYS is empty/],
  [{ AGENT_ENCRYPTION_KEYS: 'k1:short' }, /^AGENT_ENCRYPTION_KEYS key "k1" must be 32 bytes/],
  [{ AGENT_MCP_SERVERS: '[', AGENT_MCP_CONFIG: 'mcp.json' }, /^set AGENT_MCP_SERVERS or AGENT_MCP_CONFIG, not both/],
  [{ AGENT_MCP_SERVERS: '[' }, /^AGENT_MCP_SERVERS is not valid JSON/],
  [{ AGENT_TRACING: 'jaeger' }, /^AGENT_TRACING must be otlp, console or off/],
  [{ AGENT_METRICS_PORT: 'nine' }, /^AGENT_METRICS_PORT must be a port or host:port/],
  [{ AGENT_LOG_FORMAT: 'xml' }, /^AGENT_LOG_FORMAT must be text or json/],
  [{ AGENT_LOG_LEVEL: 'loud' }, /^AGENT_LOG_LEVEL must be TRACE, DEBUG, INFO, WARN or ERROR/],
  [{ TEMPORAL_TLS_CLIENT_CERT_DATA: 'cert' }, /^mTLS needs both a client certificate and its key/],
])('a worker refuses %j, naming the variable', (env, message) => {
  expect(() => workerConfig(env)).toThrow(message);
});

test('the gateway needs a token unless GATEWAY_INSECURE=1, and a port number', () => {
  expect(gatewaySettings({ GATEWAY_TOKEN: ' t ' })).toEqual({ port: 8080, host: '127.0.0.1', token: 't', controlTimeoutMs: 10_000, corsOrigins: [], jwt: null });
  expect(gatewaySettings({ GATEWAY_INSECURE: '1', GATEWAY_PORT: '9000', GATEWAY_HOST: '0.0.0.0', GATEWAY_CONTROL_TIMEOUT_MS: '2500' })).toEqual({
    port: 9000,
    host: '0.0.0.0',
    token: null,
    controlTimeoutMs: 2_500,
    corsOrigins: [],
    jwt: null,
  });
  expect(() => gatewaySettings({})).toThrow(/^GATEWAY_TOKEN is required/);
  expect(() => gatewaySettings({ GATEWAY_TOKEN: 't', GATEWAY_PORT: '70000' })).toThrow(/^GATEWAY_PORT must be a port number, got "70000"/);
  expect(() => gatewaySettings({ GATEWAY_TOKEN: 't', GATEWAY_CONTROL_TIMEOUT_MS: '0' })).toThrow(/^GATEWAY_CONTROL_TIMEOUT_MS must be a positive number of milliseconds, got "0"/);
});

test('settings: signed identities need the issuer and the audience; the claims default to tenant and roles', () => {
  const base = { GATEWAY_TOKEN: 't' };
  expect(() => gatewaySettings({ ...base, GATEWAY_JWKS_URL: 'https://id.example/jwks' })).toThrow(/GATEWAY_JWKS_URL is set without GATEWAY_JWT_ISSUER/);
  expect(() => gatewaySettings({ ...base, GATEWAY_JWKS_URL: 'https://id.example/jwks', GATEWAY_JWT_ISSUER: 'i' })).toThrow(/without GATEWAY_JWT_AUDIENCE/);
  expect(() => gatewaySettings({ ...base, GATEWAY_JWT_ISSUER: 'i' })).toThrow(/GATEWAY_JWT_ISSUER is set without GATEWAY_JWKS_URL/);
  expect(() => gatewaySettings({ ...base, GATEWAY_JWKS_URL: 'ftp://id.example/jwks', GATEWAY_JWT_ISSUER: 'i', GATEWAY_JWT_AUDIENCE: 'a' })).toThrow(/http\(s\) URL/);
  expect(() => gatewaySettings({ GATEWAY_INSECURE: '1', GATEWAY_JWKS_URL: 'https://id.example/jwks', GATEWAY_JWT_ISSUER: 'i', GATEWAY_JWT_AUDIENCE: 'a' })).toThrow(/set one of them/);
  expect(gatewaySettings({ ...base, GATEWAY_JWKS_URL: 'https://id.example/jwks', GATEWAY_JWT_ISSUER: 'i', GATEWAY_JWT_AUDIENCE: 'a,b', GATEWAY_JWT_ROLES_CLAIM: 'groups' }).jwt).toEqual({
    jwksUrl: 'https://id.example/jwks',
    issuer: 'i',
    audience: ['a', 'b'],
    tenantClaim: 'tenant',
    rolesClaim: 'groups',
  });
  expect(gatewaySettings(base).jwt).toBeNull();
});

test('gateway CORS is off by default; GATEWAY_CORS_ORIGINS lists origins (trailing slashes dropped) or *, and refuses what is not an origin', () => {
  const cors = (value: string) => gatewaySettings({ GATEWAY_TOKEN: 't', GATEWAY_CORS_ORIGINS: value }).corsOrigins;
  expect(cors(' https://app.example.com/, http://localhost:5173 ')).toEqual(['https://app.example.com', 'http://localhost:5173']);
  expect(cors('*')).toEqual(['*']);
  expect(cors('')).toEqual([]);
  expect(() => cors('app.example.com')).toThrow(/^GATEWAY_CORS_ORIGINS: "app.example.com" is not an origin/);
  expect(() => cors('https://app.example.com/path')).toThrow(/is not an origin/);
});

test('the codec server needs a long token; origins default to the dev server UI and lose trailing slashes', () => {
  const token = 'x'.repeat(16);
  expect(codecServerSettings({ CODEC_SERVER_TOKEN: token })).toEqual({ port: 8081, host: '127.0.0.1', token, allowedOrigins: DEFAULT_CODEC_SERVER_ORIGINS });
  expect(codecServerSettings({ CODEC_SERVER_TOKEN: token, CODEC_SERVER_CORS_ORIGINS: 'http://ui:8080/, *' }).allowedOrigins).toEqual(['http://ui:8080', '*']);
  expect(() => codecServerSettings({ CODEC_SERVER_TOKEN: 'short' })).toThrow(/^CODEC_SERVER_TOKEN must be set to a secret of at least 16 characters/);
  expect(() => codecServerSettings({ CODEC_SERVER_TOKEN: token, CODEC_SERVER_PORT: 'http' })).toThrow(/^CODEC_SERVER_PORT must be a port number/);
});

test('Worker Versioning: AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID together, PINNED by default; half a pair or a bad behaviour refused', () => {
  expect(workerConfig({}).versioning).toBeUndefined();
  expect(workerConfig({ AGENT_DEPLOYMENT_NAME: 'agents', AGENT_BUILD_ID: 'b-2' }).versioning).toEqual({ deploymentName: 'agents', buildId: 'b-2', defaultBehavior: 'PINNED' });
  expect(workerConfig({ AGENT_DEPLOYMENT_NAME: 'agents', AGENT_BUILD_ID: 'b-2', AGENT_VERSIONING_BEHAVIOR: 'auto-upgrade' }).versioning?.defaultBehavior).toBe('AUTO_UPGRADE');
  expect(() => workerConfig({ AGENT_BUILD_ID: 'b-2' })).toThrow('Worker Versioning needs both AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID; AGENT_DEPLOYMENT_NAME is not set');
  expect(() => workerConfig({ AGENT_DEPLOYMENT_NAME: 'agents' })).toThrow('AGENT_BUILD_ID is not set');
  expect(() => workerConfig({ AGENT_DEPLOYMENT_NAME: 'a.b', AGENT_BUILD_ID: '1' })).toThrow('AGENT_DEPLOYMENT_NAME must not contain "." or ":", got "a.b"');
  expect(() => workerConfig({ AGENT_DEPLOYMENT_NAME: 'agents', AGENT_BUILD_ID: '1', AGENT_VERSIONING_BEHAVIOR: 'sticky' })).toThrow('AGENT_VERSIONING_BEHAVIOR must be pinned or auto-upgrade, got "sticky"');
  expect(() => workerConfig({ AGENT_VERSIONING_BEHAVIOR: 'pinned' })).toThrow('AGENT_VERSIONING_BEHAVIOR is set but AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID are not');
});

test('the live stream: with nothing set, the local gateway of the Quick start; AGENT_STREAM_URL=off turns it off; Redis replaces it', () => {
  expect(streamSettings({})).toEqual({ gatewayUrl: 'http://127.0.0.1:8080', gatewayDefault: true });
  expect(streamSettings({ GATEWAY_PORT: '9090', GATEWAY_HOST: '0.0.0.0', GATEWAY_TOKEN: 't' })).toEqual({ gatewayUrl: 'http://127.0.0.1:9090', gatewayDefault: true, token: 't' });
  expect(streamSettings({ AGENT_STREAM_URL: 'off' })).toEqual({});
  expect(streamSettings({ AGENT_STREAM_URL: 'http://gw:1/' })).toEqual({ gatewayUrl: 'http://gw:1/' });
  expect(streamSettings({ AGENT_STREAM_REDIS_URL: 'redis://r:6379' })).toEqual({ redisUrl: 'redis://r:6379' });
  expect(() => streamSettings({ AGENT_STREAM_URL: 'gw:1' })).toThrow(/AGENT_STREAM_URL must be the gateway's http\(s\):\/\/ URL, or off/);
});
