# pawl for users elsewhere: a multi-stage build on the official Node.js image. (This project's own
# image is built from Debian packages by scripts/build-image.sh; docs/deploy.md compares the two.)
#   podman build -t pawl .        or        docker build -t pawl .
ARG NODE_IMAGE=node:20-bookworm-slim

# Build: dev dependencies, the TypeScript compiler, and a C++ toolchain for better-sqlite3 where
# no prebuilt binary can be downloaded. Dependencies before sources, so a code change reuses them.
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# node-gyp: the image's own headers, not a download.
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
# `npm ls` fails on a tree npm left incomplete (npm 10 can exit 0 after a failed download).
RUN npm ci --no-audit --no-fund && npm ls >/dev/null
# `npm run build`'s two steps: the CLI as one esbuild bundle (dist/cli/), the dashboard (dist/web/).
COPY tsconfig.json ./
COPY scripts/build.ts scripts/build-web.ts ./scripts/
COPY src ./src
COPY web ./web
RUN node --import tsx scripts/build.ts \
 && node --import tsx scripts/build-web.ts \
 && npm prune --omit=dev --no-audit --no-fund \
 && cd node_modules/better-sqlite3 \
 && rm -rf deps src build/Release/obj build/Release/obj.target build/Release/.deps build/Release/test_extension.node

# Runtime: git and ssh for the fleet repository, gpg for signed commits, tini to reap git's
# children, and an unprivileged user. No npm, no compiler.
FROM ${NODE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates openssh-client gnupg tini \
 && rm -rf /var/lib/apt/lists/* \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/bin/npm /usr/local/bin/npx /opt/yarn* /usr/local/bin/yarn* \
 && groupadd --gid 10001 pawl \
 && useradd --uid 10001 --gid 10001 --home-dir /var/lib/pawl --no-create-home --shell /usr/sbin/nologin pawl \
 && mkdir -p /var/lib/pawl && chown 10001:10001 /var/lib/pawl && chmod 0750 /var/lib/pawl
COPY --from=build /src/node_modules /opt/pawl/node_modules
COPY package.json README.md /opt/pawl/
COPY bin/pawl.js /opt/pawl/bin/pawl.js
COPY --from=build /src/dist /opt/pawl/dist
RUN ln -s /opt/pawl/bin/pawl.js /usr/local/bin/pawl
USER 10001:10001
# PAWL_CONFIG: mount the configuration there (or give -c); `kubectl exec … pawl explain` then needs no -c.
ENV PAWL_CONFIG=/etc/pawl/config PAWL_STATE_DIR=/var/lib/pawl NODE_ENV=production
VOLUME /var/lib/pawl
WORKDIR /var/lib/pawl
EXPOSE 9292 9293
ENTRYPOINT ["/usr/bin/tini", "--", "pawl"]
CMD ["--help"]
