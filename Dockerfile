# syntax=docker/dockerfile:1
# Worker image, also used for the codec server (`node dist/bin/codec-server.js`); see docs/deployment.md.
# Node 22 LTS: Node 20 left support in April 2026 (package.json's engines still accept 20.19+; CI tests on 20).
ARG NODE_IMAGE=node:22.22.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 is a native module: when no prebuilt binary fits, its install compiles SQLite with these.
# hadolint ignore=DL3008
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lock; package.json's allowScripts lets better-sqlite3 build its native module (as .ci/run installs).
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# Compiled to dist/ (with the gateway's web page, src/gateway/ui) so the runtime needs neither tsx nor TypeScript;
# the workflow code bundled once here rather than by webpack at every worker boot (AGENT_WORKFLOW_BUNDLE_DIR below);
# then the dev dependencies go.
RUN npm run build \
  && node dist/bin/build-workflows.js dist/workflow-bundles \
  && npm prune --omit=dev --no-audit --no-fund
# The Temporal core bridge ships a native library for five platforms; keep this one's (saves about 120 MB).
RUN releases=node_modules/@temporalio/core-bridge/releases; \
  if [ -d "$releases/$(uname -m)-unknown-linux-gnu" ]; then \
    find "$releases" -mindepth 1 -maxdepth 1 ! -name "$(uname -m)-unknown-linux-gnu" -exec rm -rf {} +; \
  fi

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Named volumes mounted on these take their ownership, so the non-root user can write to them.
RUN mkdir -p /data/agent /workspace && chown node:node /data/agent /workspace
ENV AGENT_WORKFLOW_BUNDLE_DIR=/app/dist/workflow-bundles \
  AGENT_WORKSPACE=/workspace \
  AGENT_LEDGER=/data/agent/tool-ledger.sqlite \
  AGENT_BLOB_DIR=/data/agent/blobs
# The base image's `node` user, by number so that runAsNonRoot checks can verify it.
USER 1000:1000
# The SDK shuts the worker down on SIGTERM; no npm in between to swallow the signal. No `--enable-source-maps`: the
# entry turns source maps on itself once the SDK is loaded, so only the product's own maps are read (src/bin/source-maps.ts).
CMD ["node", "dist/bin/worker.js"]
