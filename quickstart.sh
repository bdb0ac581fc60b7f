#!/bin/sh
# Sets polydnn up on a fresh Debian 12 machine and runs the main job:
# installs the build and runtime packages (PoCL gives an OpenCL device when
# there is no GPU), builds, lists the devices, then runs a convolution and a
# pooling on the default device, each checked against the host reference.
# Run as root (or through sudo): it calls apt-get.
set -eu
cd "$(dirname "$0")"
# The Debian packages polydnn needs are listed in build-aux/debian-packages.
if [ -z "${POLYDNN_SKIP_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    xargs apt-get install -y --no-install-recommends <build-aux/debian-packages
fi
./autogen.sh
./configure ${CONFIGURE_FLAGS:-}
make -j"$(nproc 2>/dev/null || echo 2)"
./polydnn devices
./polydnn conv -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 --iters 3 --verify
./polydnn pool -n 1 -c 64 -H 112 -W 112 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --mode max --iters 3 --verify
# A short training run (one epoch on 6000 images) on the default device: prints its test accuracy.
./polydnn train --epochs 1 --train-limit 6000 --test-limit 1000
