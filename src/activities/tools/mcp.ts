/**
 * Tools from MCP servers (stdio or Streamable HTTP), connected once at worker start. Each server tool becomes a
 * registry tool named `<server>_<tool>`; its JSON schema goes to the model as-is, and every call runs in the
 * `executeTool` activity like the built-in tools. Worker-side code.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ErrorCode, McpError, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import { z } from 'zod';
import { describeZodError } from '../../common/input';
import { RetryableToolError, type Tool } from './registry';

const ServerName = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'must be 1 to 32 characters of A-Z a-z 0-9 _ -');

export const McpServerConfigSchema = z
  .object({
    name: ServerName,
    /** stdio: the command that starts the server, with `args`, `env` (added to a minimal PATH/HOME set) and `cwd`. */
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    /** Streamable HTTP: the server's endpoint, with optional request `headers`. */
    url: z.url({ protocol: /^https?$/ }).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    /**
     * Longest a single request may take; a tool call's activity may take this plus MCP_TOOL_TIMEOUT_MARGIN_MS.
     * @default 60000 (the SDK's)
     */
    timeoutMs: z.number().int().positive().optional(),
  })
  .refine((c) => Boolean(c.command) !== Boolean(c.url), 'give either command (stdio) or url (Streamable HTTP), not both');

export type McpServerConfig = z.output<typeof McpServerConfigSchema>;

const McpServersSchema = z.array(McpServerConfigSchema).superRefine((servers, ctx) => {
  const seen = new Set<string>();
  for (const [i, server] of servers.entries()) {
    if (seen.has(server.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `server name "${server.name}" is used twice` });
    seen.add(server.name);
  }
});

/**
 * Parses a server list: an array of configs, or the common `{ "mcpServers": { "<name>": { ... } } }` file shape.
 * Throws an error that names `source` and the field.
 */
export function parseMcpServers(value: unknown, source: string): McpServerConfig[] {
  const named = value && typeof value === 'object' && !Array.isArray(value) && 'mcpServers' in value ? (value as { mcpServers: unknown }).mcpServers : undefined;
  const list =
    named && typeof named === 'object' ? Object.entries(named).map(([name, config]) => ({ name, ...(config as object) })) : value;
  const parsed = McpServersSchema.safeParse(list);
  if (!parsed.success) throw new Error(`invalid MCP server config in ${source}: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/**
 * What a tool call's activity may take beyond the server's request timeout: a quick reconnect to a server that went
 * away, and room for the SDK's own timeout to fire before Temporal's start-to-close, so the model hears what happened.
 */
export const MCP_TOOL_TIMEOUT_MARGIN_MS = 15_000;

/** The server's request timeout: its config's, or the SDK's default. */
export const mcpRequestTimeoutMs = (config: McpServerConfig): number => config.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MSEC;

/** `<server>_<tool>`, cut to the registry's rule: 1 to 64 of `[A-Za-z0-9_-]`. */
export const mcpToolName = (server: string, tool: string): string => `${server}_${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);

interface CallToolOutcome {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  toolResult?: unknown;
}

/** The text the model sees: text parts verbatim, other parts summarised, structured content when there is nothing else. */
export function mcpResultText(result: CallToolOutcome): string {
  if (result.toolResult !== undefined) return JSON.stringify(result.toolResult); // protocol 2024-10-07 servers
  const parts = (result.content ?? []).map((raw) => {
    const part = raw as Record<string, any>;
    switch (part.type) {
      case 'text':
        return String(part.text);
      case 'image':
      case 'audio':
        return `[${part.type} ${part.mimeType}, ${Math.floor((String(part.data).length * 3) / 4)} bytes, not shown]`;
      case 'resource':
        return typeof part.resource?.text === 'string'
          ? `[resource ${part.resource.uri}]\n${part.resource.text}`
          : `[resource ${part.resource?.uri} (${part.resource?.mimeType ?? 'binary'}), not shown]`;
      case 'resource_link':
        return `[resource link ${part.uri}${part.name ? ` "${part.name}"` : ''}]`;
      default:
        return `[${String(part.type)} content, not shown]`;
    }
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}

const CLIENT_INFO = { name: 'durable-agent-worker', version: '0.1.0' };

/** One server's client; a connection that dropped (a crashed stdio server) is made again on the next call. */
class McpConnection {
  private client: Client | undefined;
  private http: StreamableHTTPClientTransport | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;
  /** The stdio server's process id while it runs. */
  pid: number | undefined;

  constructor(readonly config: McpServerConfig) {}

  connected(): Promise<Client> {
    if (this.closed) return Promise.reject(new Error(`MCP server ${this.config.name} is closed`));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    const { config } = this;
    const transport = config.command
      ? new StdioClientTransport({ command: config.command, args: config.args, env: config.env, cwd: config.cwd })
      : new StreamableHTTPClientTransport(new URL(config.url!), { requestInit: { headers: config.headers } });
    const client = new Client(CLIENT_INFO);
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.pid = undefined;
    };
    try {
      await client.connect(transport, { timeout: config.timeoutMs });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new Error(`cannot connect to MCP server ${config.name}: ${(err as Error).message}`, { cause: err });
    }
    if (transport instanceof StdioClientTransport) this.pid = transport.pid ?? undefined;
    else this.http = transport;
    this.client = client;
    return client;
  }

  async listTools(): Promise<McpTool[]> {
    const client = await this.connected();
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.config.timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    this.pid = undefined;
    // An HTTP server keeps a session until told it is over.
    await this.http?.terminateSession().catch(() => undefined);
    await client?.close();
  }
}

const validators = new AjvJsonSchemaValidator();

/** Arguments must be a JSON object; with a schema ajv can compile, they are checked before the call leaves the worker. */
function argumentsSchema(schema: Record<string, unknown>) {
  let validate: ((input: unknown) => { valid: boolean; errorMessage?: string }) | undefined;
  try {
    validate = validators.getValidator(schema);
  } catch {
    // A schema ajv cannot compile: the server validates the arguments itself.
  }
  return z.looseObject({}).superRefine((args, ctx) => {
    const result = validate?.(args);
    if (result && !result.valid) ctx.addIssue({ code: 'custom', message: readable(result.errorMessage ?? 'do not match the schema') });
  });
}

/** ajv names the arguments `data`: "data must have required property 'b', data/a must be number". */
const readable = (message: string) =>
  message
    .split(', ')
    .map((m) => m.replace(/^data\//, '').replace(/^data /, 'the arguments '))
    .join(', ');

/** A failed request that never reached the tool, or whose outcome is unknown (timeout, dropped connection). */
const isTransportError = (err: unknown) =>
  !(err instanceof McpError) || err.code === ErrorCode.ConnectionClosed || err.code === ErrorCode.RequestTimeout;

function toRegistryTool(connection: McpConnection, tool: McpTool): Tool {
  const server = connection.config.name;
  const { $schema: _ignored, ...jsonSchema } = tool.inputSchema as Record<string, unknown>;
  const readOnly = tool.annotations?.readOnlyHint === true;
  return {
    name: mcpToolName(server, tool.name),
    description: tool.description ?? tool.title ?? `Tool ${tool.name} of the MCP server ${server}.`,
    parameters: argumentsSchema(jsonSchema),
    jsonSchema,
    sideEffects: !readOnly,
    timeoutMs: mcpRequestTimeoutMs(connection.config) + MCP_TOOL_TIMEOUT_MARGIN_MS,
    async execute(args, ctx) {
      const client = await connection.connected().catch((err: Error) => {
        throw new RetryableToolError(err.message); // nothing was sent: safe to try again
      });
      let result: CallToolOutcome;
      try {
        // The signal aborts on cancellation: the SDK sends notifications/cancelled and the call ends at once.
        result = (await client.callTool({ name: tool.name, arguments: args }, undefined, {
          signal: ctx.signal,
          timeout: mcpRequestTimeoutMs(connection.config),
        })) as CallToolOutcome;
      } catch (err) {
        const message = `MCP server ${server}: ${(err as Error).message}`;
        if (ctx.signal.aborted || !isTransportError(err)) throw new Error(message);
        // The request may have run: repeat only what changes nothing, and tell the model about the rest.
        if (readOnly) throw new RetryableToolError(message);
        throw new Error(`${message}; the call may or may not have taken effect`);
      }
      const text = mcpResultText(result);
      if (result.isError) throw new Error(text || `${tool.name} failed`);
      return text || '(no output)';
    },
  };
}

export interface McpServerInfo {
  name: string;
  /** Registry names of the server's tools. */
  tools: string[];
  /** The stdio server's process id while it runs. */
  readonly pid: number | undefined;
}

export interface McpTools {
  tools: Tool[];
  servers: McpServerInfo[];
  /** Closes every client; stdio servers get end of input, then SIGTERM, then SIGKILL (the SDK's 2 s steps). */
  close(): Promise<void>;
}

/** Connects to every server and lists its tools; any failure closes the rest and throws, naming the server. */
export async function connectMcpServers(configs: McpServerConfig[]): Promise<McpTools> {
  const connections = configs.map((config) => new McpConnection(config));
  const close = async () => {
    await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  };
  const listed = await Promise.allSettled(connections.map((c) => c.listTools()));
  const failures = listed.flatMap((outcome, i) => (outcome.status === 'rejected' ? [`${configs[i].name}: ${(outcome.reason as Error).message}`] : []));
  if (failures.length) {
    await close();
    throw new Error(`MCP server(s) unavailable: ${failures.join('; ')}`);
  }
  const tools: Tool[] = [];
  const servers: McpServerInfo[] = [];
  const origin = new Map<string, string>();
  for (const [i, connection] of connections.entries()) {
    const names: string[] = [];
    for (const mcpTool of (listed[i] as PromiseFulfilledResult<McpTool[]>).value) {
      const tool = toRegistryTool(connection, mcpTool);
      const earlier = origin.get(tool.name);
      if (earlier) {
        await close();
        throw new Error(`MCP tools ${earlier} and ${connection.config.name}/${mcpTool.name} both become "${tool.name}"`);
      }
      origin.set(tool.name, `${connection.config.name}/${mcpTool.name}`);
      tools.push(tool);
      names.push(tool.name);
    }
    servers.push({
      name: connection.config.name,
      tools: names,
      get pid() {
        return connection.pid;
      },
    });
  }
  return { tools, servers, close };
}
