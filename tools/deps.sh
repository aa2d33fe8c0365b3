#!/bin/sh
# Installs the Debian packages kiln builds with (as root), or prints the exact command.
# usage: tools/deps.sh PACKAGE...
set -eu
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "kiln: installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "kiln: missing Debian packages; run:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    exit 1
  fi
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ] || [ ! -f "$cuda/include/cuda_runtime_api.h" ]; then
  echo "kiln: no CUDA toolkit at $cuda (set CUDA_HOME); kiln needs nvcc, NVRTC, cudart and cuDNN" >&2
  exit 1
fi
