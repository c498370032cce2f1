# Worker image: runs the TypeScript sources with tsx, as the local `npm run worker` does.
FROM node:20-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Dev dependencies included: tsx runs the worker.
RUN npm ci --no-audit --no-fund

FROM node:20-slim
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
# The named volume mounted here takes this ownership, so the non-root user can write to it.
RUN mkdir -p /workspace && chown node:node /workspace
ENV AGENT_WORKSPACE=/workspace
USER node
CMD ["npx", "tsx", "src/worker.ts"]
