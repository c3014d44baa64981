# syntax=docker/dockerfile:1
# `caplo serve` in a container: docs/operators/docker.md. Build from the repository root:
#   docker build -t caplo .
# The server runs as the non-root user `caplo` (uid 10001); everything it keeps (the SQLite store, the
# releases `caplo agent publish` writes, invocation logs) is in one volume, /data.

FROM node:20-bookworm-slim AS build
# better-sqlite3 compiles from source where no prebuilt binary can be fetched.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# npm ci also installs Node 24 for tool packages (runtime/node24) and builds the docs site (dist/docs-site).
RUN npm ci --no-audit --no-fund \
 && NODE_ENV=production node node_modules/vite/bin/vite.js build -c widget/vite.config.ts \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf tests bench tmp .git

FROM node:20-bookworm-slim
# util-linux (unshare, setpriv, mount) and bash: the tool sandbox's launcher (docs/runner.md).
RUN apt-get update && apt-get install -y --no-install-recommends util-linux mount bash ca-certificates tini && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 caplo \
 && useradd --system --uid 10001 --gid caplo --home-dir /data --shell /usr/sbin/nologin caplo \
 && mkdir -p /data && chown caplo:caplo /data
WORKDIR /app
COPY --from=build --chown=root:root /app /app
# The host bundle tool processes load and the CLI's own bundle (bin/cliBundle.mjs) are built once, on
# first use, under node_modules/.cache: the only folder of /app the server writes.
RUN mkdir -p /app/node_modules/.cache && chown caplo:caplo /app/node_modules/.cache
USER caplo
ENV NODE_ENV=production \
    CAPLO_HOST=0.0.0.0 \
    CAPLO_PORT=8080 \
    CAPLO_DB=/data/caplo.db \
    CAPLO_RELEASES_DIR=/data/releases \
    CAPLO_INVOCATION_LOG=/data/invocations.jsonl
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CAPLO_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/bin/caplo.mjs"]
CMD ["serve"]
