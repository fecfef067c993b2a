# syntax=docker/dockerfile:1
# One image for the API and the worker (docker-compose.yml picks the command).
#   docker build -t tether .
#   docker run -e REDIS_URL=redis://:<password>@<host>:6379 -e TETHER_API_KEYS=<tenant>:<key> -e HOST=0.0.0.0 \
#     -p 127.0.0.1:3000:3000 tether node apps/api/dist/server.js      (or apps/worker/dist/main.js)
# Nothing secret is baked in: no API key (without TETHER_API_KEYS the API listens on the container's
# loopback only), no Redis password, replay scripts off (TETHER_ALLOW_REPLAY unset). It runs as `node`.

# --- build: every dependency, then compile every package to dist/ ---
FROM node:20-bookworm-slim AS build
RUN npm install -g pnpm@12.4.2
WORKDIR /app
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .pnpmfile.mjs tsconfig.base.json ./
# The patched dependencies (pnpm-workspace.yaml, patchedDependencies).
COPY patches patches
COPY apps/api/package.json apps/api/
COPY apps/console/package.json apps/console/
COPY apps/worker/package.json apps/worker/
COPY packages/agent/package.json packages/agent/
COPY packages/client/package.json packages/client/
COPY packages/config/package.json packages/config/
COPY packages/fuzzy-match/package.json packages/fuzzy-match/
COPY packages/mcp/package.json packages/mcp/
COPY packages/outbound/package.json packages/outbound/
COPY packages/protocol/package.json packages/protocol/
COPY packages/store/package.json packages/store/
COPY packages/telemetry/package.json packages/telemetry/
COPY packages/testing/package.json packages/testing/
COPY packages/tools/package.json packages/tools/
RUN pnpm install --frozen-lockfile
COPY apps apps
COPY packages packages
RUN pnpm build

# --- prod-deps: production dependencies only ---
FROM build AS prod-deps
RUN rm -rf node_modules apps/*/node_modules packages/*/node_modules \
  && pnpm install --frozen-lockfile --prod

# --- runtime: Node, bubblewrap for the bash sandbox, a non-root user ---
FROM node:20-bookworm-slim AS runtime
RUN apt-get update \
  && apt-get install -y --no-install-recommends bubblewrap util-linux ca-certificates \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    TETHER_WORKSPACE_ROOT=/workspaces
WORKDIR /app
COPY --from=prod-deps /app/node_modules node_modules
COPY --from=prod-deps /app/package.json /app/pnpm-workspace.yaml ./
COPY --from=prod-deps /app/apps apps
COPY --from=prod-deps /app/packages packages
RUN mkdir -p /workspaces && chown node:node /workspaces
USER node
EXPOSE 3000
CMD ["node", "apps/api/dist/server.js"]
