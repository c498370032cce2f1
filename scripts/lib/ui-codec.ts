import { DEFAULT_CODEC_SERVER_PORT, encryptionSettings } from '../../src/config';

/**
 * The codec endpoint for the dev server's Web UI: CODEC_SERVER_URL, else the local `npm run codec-server` when
 * AGENT_ENCRYPTION_KEYS is set (passed even when it is not up yet, so starting it later needs no server restart).
 * `up` says whether that local codec server answers now; an explicit URL is not probed (it may sit behind a proxy).
 */
export async function uiCodecEndpoint(env: NodeJS.ProcessEnv = process.env): Promise<{ url: string; up: boolean } | undefined> {
  const explicit = env.CODEC_SERVER_URL?.trim().replace(/\/+$/, '');
  if (explicit) return { url: explicit, up: true };
  if (!encryptionSettings(env)) return undefined;
  const url = `http://127.0.0.1:${env.CODEC_SERVER_PORT?.trim() || DEFAULT_CODEC_SERVER_PORT}`;
  const up = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false);
  return { url, up };
}
