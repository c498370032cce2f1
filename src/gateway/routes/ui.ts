/**
 * The web page for runs (`/ui`, `/ui/runs/:id`): four static files from `src/gateway/ui/` (copied into `dist/` by the
 * build). They hold no data, so they are served without the token, which a browser cannot send on a navigation; the
 * page asks for the token and sends it on every API call and on the event stream. See docs/gateway.md.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** The page's routes; the auth hook lets them through without a token. */
export const UI_ROUTES = ['/ui', '/ui/runs/:id', '/ui/assets/app.js', '/ui/assets/views.js', '/ui/assets/app.css', '/favicon.ico'] as const;

const UI_DIR = path.join(__dirname, '..', 'ui');

/** Only the page's own script, style and API: no inline script, nothing from elsewhere, no framing. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

function read(name: string): string {
  try {
    return readFileSync(path.join(UI_DIR, name), 'utf8');
  } catch (err) {
    throw new Error(`the gateway's web page is missing ${path.join(UI_DIR, name)} (a build must copy src/gateway/ui; \`npm run build\` does), or turn the page off with \`ui: false\`: ${(err as Error).message}`);
  }
}

export function registerUiRoutes(app: FastifyInstance): void {
  const files = { html: read('index.html'), js: read('app.js'), views: read('views.js'), css: read('app.css') };
  const send = (reply: FastifyReply, type: string, body: string) => reply.headers(SECURITY_HEADERS).type(type).send(body);
  app.get('/ui', async (_request, reply) => send(reply, 'text/html; charset=utf-8', files.html));
  app.get('/ui/runs/:id', async (_request, reply) => send(reply, 'text/html; charset=utf-8', files.html));
  app.get('/ui/assets/app.js', async (_request, reply) => send(reply, 'text/javascript; charset=utf-8', files.js));
  app.get('/ui/assets/views.js', async (_request, reply) => send(reply, 'text/javascript; charset=utf-8', files.views));
  app.get('/ui/assets/app.css', async (_request, reply) => send(reply, 'text/css; charset=utf-8', files.css));
  // Browsers ask for it on their own, without the token: no icon, and no 401 in the console.
  app.get('/favicon.ico', async (_request, reply) => reply.code(204).header('cache-control', 'public, max-age=86400').send());
}
