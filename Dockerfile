# syntax=docker/dockerfile:1
# Melvin's worker and ingress image: built in one stage with every dependency, run in a slim stage as a non-root user.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Not `npm ci`: see scripts/ensure-deps.mjs. Install scripts stay off, as package.json's allowScripts says.
RUN npm install --no-save --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# Only the product: the sandbox, scripts, tests and experiments never enter the image.
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
RUN groupadd --system melvin && useradd --system --gid melvin --home-dir /app --shell /usr/sbin/nologin melvin
COPY --from=build --chown=melvin:melvin /app/node_modules ./node_modules
COPY --from=build --chown=melvin:melvin /app/dist ./dist
COPY --chown=melvin:melvin prompts ./prompts
COPY --chown=melvin:melvin src/ingress/report-page ./src/ingress/report-page
COPY --chown=melvin:melvin package.json ./
# The ingress's outbox (INGRESS_OUTBOX_DIR in the compose file): a volume mounted here takes this owner.
RUN mkdir -p /var/lib/melvin/outbox && chown melvin:melvin /var/lib/melvin/outbox
USER melvin
# 8780: ingress; 9464: worker metrics; 9465: ingress metrics.
EXPOSE 8780 9464 9465
# The worker by default; the compose file runs the ingress from the same image with its own command.
CMD ["node", "dist/src/worker.js"]
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9464/metrics').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
