#!/usr/bin/env node
/**
 * The codec server process: `npm run codec-server` (`node dist/bin/codec-server.js` in the image). CODEC_SERVER_TOKEN
 * (required), CODEC_SERVER_PORT (8081), CODEC_SERVER_HOST (127.0.0.1), CODEC_SERVER_CORS_ORIGINS, and the worker's
 * codec settings (AGENT_ENCRYPTION_KEYS, AGENT_BLOB_DIR, AGENT_CLAIM_CHECK).
 */
import { createDataConverter } from '../codec';
import { createCodecServer, WILDCARD_NO_SESSIONS } from '../codec/server';
import { codecServerSettings, codecSettings } from '../config';

async function main(): Promise<void> {
  const settings = codecServerSettings(process.env);
  const codecs = codecSettings(process.env);
  const keys = codecs.encryption;
  const app = createCodecServer({ codecs: createDataConverter(codecs).payloadCodecs ?? [], token: settings.token, allowedOrigins: settings.allowedOrigins });
  await app.listen({ port: settings.port, host: settings.host });
  const url = `http://${settings.host}:${settings.port}`;
  console.log(`codec server on ${url}: ${keys ? `decrypts with keys ${Object.keys(keys.keys).join(', ')} (current ${keys.currentKeyId})` : 'no AGENT_ENCRYPTION_KEYS, so it only resolves claim checks'}`);
  console.log(`CORS origins: ${settings.allowedOrigins.join(', ')}`);
  if (settings.allowedOrigins.includes('*')) console.warn(`warning: ${WILDCARD_NO_SESSIONS}`);
  else console.log(`Web UI: sign in at ${url}/login, with "include cross-origin credentials" on in the UI (docs/ui.md)`);
  console.log(`CLI: temporal workflow show --workflow-id <id> --codec-endpoint ${url} --codec-auth "Bearer $CODEC_SERVER_TOKEN"`);
  const stop = () => void app.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
