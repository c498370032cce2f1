/**
 * Memories across runs over HTTP: `/v1/memory/:namespace` (list), `/search`, and `/keys/:key` (get, put, delete), in the
 * workers' store through `AgentClient.memory`. A signed caller reads and writes its own tenant's memories only:
 * another tenant's namespace is empty to it, and its keys are not found (docs/memory.md).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MemoryDeletedSchema, MemoryListQuerySchema, MemoryListSchema, MemorySchema, MemorySearchQuerySchema, MemorySearchResultSchema, MemoryWriteSchema } from '../../common/memory';
import type { GatewayContext } from '../context';
import { HttpError } from '../errors';
import { callerTenant } from '../identity';
import { answer } from '../responses';
import { MemoryKeyParamsSchema, MemoryNamespaceParamsSchema, parseOr400 } from '../schemas';

const notFound = (namespace: string, key: string) => new HttpError(404, 'memory_not_found', `no memory ${key} in namespace ${namespace}`);

export function registerMemoryRoutes(app: FastifyInstance, { agents }: GatewayContext): void {
  // The service (null) writes the default tenant's memories, where runs without a tenant keep theirs.
  const tenant = (request: FastifyRequest) => ({ tenant: callerTenant(request.caller) });

  app.get('/v1/memory/:namespace', async (request) => {
    const { namespace } = parseOr400(MemoryNamespaceParamsSchema, request.params, 'path');
    const query = parseOr400(MemoryListQuerySchema, request.query, 'query');
    return answer(MemoryListSchema, await agents.memory.list(namespace, { ...query, ...tenant(request) }));
  });

  app.post('/v1/memory/:namespace/search', async (request) => {
    const { namespace } = parseOr400(MemoryNamespaceParamsSchema, request.params, 'path');
    const body = parseOr400(MemorySearchQuerySchema, request.body, 'memory search');
    return answer(MemorySearchResultSchema, { hits: await agents.memory.search(namespace, { ...body, ...tenant(request) }) });
  });

  app.get('/v1/memory/:namespace/keys/:key', async (request) => {
    const { namespace, key } = parseOr400(MemoryKeyParamsSchema, request.params, 'path');
    const memory = await agents.memory.get(namespace, key, tenant(request));
    if (!memory) throw notFound(namespace, key);
    return answer(MemorySchema, memory);
  });

  app.put('/v1/memory/:namespace/keys/:key', async (request) => {
    const { namespace, key } = parseOr400(MemoryKeyParamsSchema, request.params, 'path');
    const body = parseOr400(MemoryWriteSchema, request.body, 'memory');
    return answer(MemorySchema, await agents.memory.put(namespace, key, body, tenant(request)));
  });

  app.delete('/v1/memory/:namespace/keys/:key', async (request) => {
    const { namespace, key } = parseOr400(MemoryKeyParamsSchema, request.params, 'path');
    if (!(await agents.memory.delete(namespace, key, tenant(request)))) throw notFound(namespace, key);
    return answer(MemoryDeletedSchema, { deleted: true });
  });
}
