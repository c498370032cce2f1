/** MCP tools: a real stdio MCP server (test/fixtures/mcp-server.ts) through the registry and agentRun, and a Streamable HTTP one. */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { connectMcpServers, MCP_TOOL_TIMEOUT_MARGIN_MS, parseMcpServers, type McpTools } from '../src/activities/tools/mcp';
import { ToolRegistry } from '../src/activities/tools/registry';
import { createFixtureServer } from './fixtures/mcp-server';
import { startAgentHarness, waitFor, type AgentHarness } from './support/agent-harness';

// The shape AGENT_MCP_SERVERS takes.
const STDIO_CONFIG = JSON.stringify([{ name: 'fixtures', command: process.execPath, args: ['--import', 'tsx', 'test/fixtures/mcp-server.ts'] }]);

let mcp: McpTools;
let h: AgentHarness;
beforeAll(async () => {
  mcp = await connectMcpServers(parseMcpServers(JSON.parse(STDIO_CONFIG), 'AGENT_MCP_SERVERS'));
  h = await startAgentHarness(undefined, { tools: mcp.tools });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

const toolMessages = (request: any) => request.messages.filter((m: any) => m.role === 'tool');
const ctx = () => ({ idempotencyKey: randomUUID(), signal: new AbortController().signal });

test('the registry lists the server tools as <server>_<tool>, their JSON schemas passed through', async () => {
  const registry = new ToolRegistry(mcp.tools);
  expect(registry.names()).toEqual(['fixtures_add', 'fixtures_echo', 'fixtures_fail']);
  const [add] = registry.definitions(['fixtures_add']);
  expect(add.function).toMatchObject({
    description: 'Add two numbers.',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  });
  // readOnlyHint makes add free of side effects; echo says nothing, so it counts as changing the world.
  expect(mcp.tools.map((t) => [t.name, t.sideEffects])).toEqual([['fixtures_add', false], ['fixtures_echo', true], ['fixtures_fail', true]]);
  // Arguments are checked against the server's schema before anything is sent.
  const invalid = await registry.run({ id: 'c1', name: 'fixtures_add', arguments: '{"a":"two"}' }, ctx());
  expect(invalid).toMatchObject({ ok: false });
  expect(invalid.content).toMatch(/^Error: invalid arguments for fixtures_add: .*required property 'b'.*a must be number/);
});

test('an agentRun calls fixtures_add on the real server, gets 5 back and completes', async () => {
  h.model.register('mcp-add', ({ request, callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ name: 'fixtures_add', arguments: { a: 2, b: 3 } }] } : { text: `The sum is ${toolMessages(request)[0].content}.` },
  );
  const handle = await h.start({ prompt: 'Add 2 and 3', model: 'mcp-add' });
  const result = await handle.result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'The sum is 5.', toolCalls: 1 });
  const [first, second] = h.model.requests('mcp-add');
  expect(first.body.tools.find((t: any) => t.function.name === 'fixtures_add').function.parameters.required).toEqual(['a', 'b']);
  expect(toolMessages(second.body)).toEqual([expect.objectContaining({ role: 'tool', content: '5' })]);
});

test('an MCP isError result reaches the model as a tool error', async () => {
  h.model.register('mcp-fail', ({ request, callIndex }) =>
    callIndex === 0 ? { toolCalls: [{ name: 'fixtures_fail', arguments: { message: 'not today' } }] } : { text: `It failed: ${toolMessages(request)[0].content}` },
  );
  const result = await (await h.start({ prompt: 'Try it', model: 'mcp-fail' })).result();

  expect(result).toMatchObject({ status: 'COMPLETED', answer: 'It failed: Error: refused: not today' });
  expect(toolMessages(h.model.requests('mcp-fail')[1].body)).toEqual([expect.objectContaining({ content: 'Error: refused: not today' })]);
});

/** Serves `server` over Streamable HTTP on a free port, for one client session. */
async function serveOverHttp(server: McpServer): Promise<{ url: string; close(): Promise<void> }> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  await server.connect(transport);
  const httpServer = http.createServer((req, res) => void transport.handleRequest(req, res));
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    async close() {
      await server.close();
      httpServer.closeAllConnections();
      await new Promise((resolve) => httpServer.close(resolve));
    },
  };
}

test('a Streamable HTTP server works the same way', async () => {
  const served = await serveOverHttp(createFixtureServer());
  const web = await connectMcpServers(parseMcpServers([{ name: 'web', url: served.url }], 'test'));
  try {
    const registry = new ToolRegistry(web.tools);
    expect(registry.names()).toEqual(['web_add', 'web_echo', 'web_fail']);
    await expect(registry.run({ id: 'c1', name: 'web_echo', arguments: '{"text":"over HTTP"}' }, ctx())).resolves.toMatchObject({ ok: true, content: 'over HTTP' });
    await expect(registry.run({ id: 'c2', name: 'web_fail', arguments: '{"message":"no"}' }, ctx())).resolves.toMatchObject({ ok: false, content: 'Error: refused: no' });
  } finally {
    await web.close();
    await served.close();
  }
});

test("an MCP tool's timeout is its server's request timeout plus a margin; the SDK's 60 s when the config has none", () => {
  expect(mcp.tools.map((t) => t.timeoutMs)).toEqual([60_000 + MCP_TOOL_TIMEOUT_MARGIN_MS, 60_000 + MCP_TOOL_TIMEOUT_MARGIN_MS, 60_000 + MCP_TOOL_TIMEOUT_MARGIN_MS]);
  // The model activity marks calls with it, so the run gives the tool's activity that start-to-close.
  expect(new ToolRegistry(mcp.tools).withHints({ id: 'c', name: 'fixtures_echo', arguments: '{}' })).toEqual({
    id: 'c',
    name: 'fixtures_echo',
    arguments: '{}',
    timeoutMs: 60_000 + MCP_TOOL_TIMEOUT_MARGIN_MS,
  });
});

test("a slow MCP call ends at the server's timeout, and at once when its signal aborts, which the server hears", async () => {
  const cancelledOnServer: string[] = [];
  const server = new McpServer({ name: 'slow', version: '1.0.0' });
  server.registerTool('wait', { description: 'Waits, unless cancelled.', inputSchema: { ms: z.number(), label: z.string() } }, ({ ms, label }, extra) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: `waited ${ms} ms` }] }), ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        cancelledOnServer.push(label);
      });
    }),
  );
  const served = await serveOverHttp(server);
  const slow = await connectMcpServers(parseMcpServers([{ name: 'slow', url: served.url, timeoutMs: 1_000 }], 'test'));
  try {
    const registry = new ToolRegistry(slow.tools);
    expect(registry.timeoutOf('slow_wait')).toBe(1_000 + MCP_TOOL_TIMEOUT_MARGIN_MS);
    await expect(registry.run({ id: 'c1', name: 'slow_wait', arguments: '{"ms":100,"label":"quick"}' }, ctx())).resolves.toMatchObject({ ok: true, content: 'waited 100 ms' });

    const started = Date.now();
    const timedOut = await registry.run({ id: 'c2', name: 'slow_wait', arguments: '{"ms":10000,"label":"timeout"}' }, ctx());
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(timedOut.ok).toBe(false);
    expect(timedOut.content).toMatch(/^Error: MCP server slow: .*timed out.*; the call may or may not have taken effect$/i);

    // Ended by the abort at 200 ms, not by the 1 s timeout: the result names the abort's reason.
    const controller = new AbortController();
    const running = registry.run({ id: 'c3', name: 'slow_wait', arguments: '{"ms":10000,"label":"abort"}' }, { idempotencyKey: randomUUID(), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('run aborted')), 200);
    const aborted = await running;
    expect(aborted).toMatchObject({ ok: false });
    expect(aborted.content).toMatch(/run aborted/);
    expect(aborted.content).not.toMatch(/timed out/i);
    // The SDK tells the server (notifications/cancelled) on both ends of a call.
    await waitFor(() => (cancelledOnServer.includes('abort') ? true : undefined), 2_000, 'the server to hear the cancellation');
    expect(cancelledOnServer).toEqual(['timeout', 'abort']);
  } finally {
    await slow.close();
    await served.close();
  }
});

test('a config names the field it gets wrong, and the mcpServers file shape is accepted', () => {
  expect(parseMcpServers({ mcpServers: { files: { command: 'node', args: ['s.js'] } } }, 'file')).toEqual([{ name: 'files', command: 'node', args: ['s.js'] }]);
  expect(() => parseMcpServers([{ name: 'bad name', command: 'node' }], 'AGENT_MCP_SERVERS')).toThrow(/AGENT_MCP_SERVERS: 0\.name: must be/);
  expect(() => parseMcpServers([{ name: 'x', command: 'node', url: 'http://h/mcp' }], 'env')).toThrow(/either command .* or url/);
  expect(() => parseMcpServers([{ name: 'x', command: 'a' }, { name: 'x', command: 'b' }], 'env')).toThrow(/1\.name: server name "x" is used twice/);
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('a stdio server that died is started again on the next call', async () => {
  const crashed = mcp.servers[0].pid!;
  process.kill(crashed, 'SIGKILL');
  await waitFor(() => (mcp.servers[0].pid === undefined ? true : undefined), 5_000, 'the client to see the server go');
  const registry = new ToolRegistry(mcp.tools);
  await expect(registry.run({ id: 'c1', name: 'fixtures_add', arguments: '{"a":1,"b":1}' }, ctx())).resolves.toMatchObject({ ok: true, content: '2' });
  expect(mcp.servers[0].pid).toBeGreaterThan(0);
  expect(mcp.servers[0].pid).not.toBe(crashed);
}, 30_000);

// Last: it closes the stdio server the other tests use.
test('closing the MCP clients ends the stdio server process', async () => {
  const pid = mcp.servers[0].pid!;
  expect(alive(pid)).toBe(true);
  await mcp.close();
  await waitFor(() => (alive(pid) ? undefined : true), 5_000, `MCP server process ${pid} to exit`);
});
