# Sourced by scripts/images.sh and the image tests' make target: podman as it works on this
# kind of machine. Installs the pinned Debian packages when podman is missing; builds with
# chroot isolation; runs with runc (crun refuses these machines' hybrid cgroups) and ulimits
# no higher than the host's (raising one is not permitted here).
PODMAN_PACKAGES=(podman=4.3.1+ds1-8+deb12u1+b3 runc=1.1.5+ds1-1+deb12u1 mmdebstrap=1.3.5-7)
if ! command -v podman > /dev/null || ! command -v runc > /dev/null || ! command -v mmdebstrap > /dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PODMAN_PACKAGES[@]}" > /dev/null
fi
# Every container, a pod's infra container included, gets these through containers.conf
# (nproc past a few thousand is refused here even below the host's limit).
CONTAINERS_CONF=$(mktemp -d)/containers.conf
cat > "$CONTAINERS_CONF" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF

build_image() { podman build --quiet --isolation=chroot "$@" > /dev/null; }
