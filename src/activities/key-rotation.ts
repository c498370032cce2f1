/**
 * One request over a route's keys in turn, as every model request of the worker makes it (the main call, the critic,
 * compaction): a key refused for auth or billing is marked to be skipped for a while (`Providers.failed`) and the
 * next one is tried at once. Any other error, or the last key's, is thrown as it is.
 */
import type { Context } from '@temporalio/activity';
import type OpenAI from 'openai';
import { classifyModelError } from './errors';
import { KEY_FAILURES, type Providers, type Route } from './providers';

export async function withKeyRotation<T>(route: Route, providers: Providers | undefined, cancelled: () => boolean, ctx: Context, open: (client: OpenAI) => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    const key = route.keys[i];
    try {
      const opened = await open(key.client);
      await providers?.succeeded(key);
      return opened;
    } catch (err) {
      const type = cancelled() ? undefined : classifyModelError(err).type;
      if (!type || !KEY_FAILURES.includes(type)) throw err;
      await providers?.failed(key);
      if (i === route.keys.length - 1) throw err;
      ctx.log.warn('a provider key was refused: the next key is tried', { provider: route.provider, key: key.index, next: route.keys[i + 1].index, type });
    }
  }
}
