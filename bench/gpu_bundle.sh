#!/bin/sh
# Builds, on a development machine, what bench/gpu_check.sh runs on a lent
# GPU machine (which starts bare and reaches no package registry) into
# .gpu/ at the top of the checkout: a static build of the tool, the tests
# and the benchmarks (no MPI, no oneDNN: neither is on that machine), the
# Debian libraries they load that its Ubuntu CUDA image lacks (the ICD
# loader, CLBlast, Criterion and Criterion's own), and a wrapper that sets
# LD_LIBRARY_PATH for polydnn alone. The build includes uncommitted
# changes. Usage: bench/gpu_bundle.sh [build-dir]; then pass carry [".gpu"]
# and run `bash bench/gpu_check.sh` there.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=${1:-/tmp/polydnn-gpu-build}
rm -rf "$b"
git clone -q "$top" "$b"
git -C "$top" diff HEAD | git -C "$b" apply --allow-empty
cd "$b"
./autogen.sh >/dev/null 2>&1
./configure --without-mpi --without-dnnl --disable-shared --enable-werror >configure.out 2>&1
grep -q "CUDA backend:    yes" configure.out || { echo "gpu_bundle: configure did not find CUDA and cuDNN" >&2; exit 1; }
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" check TESTS= >/dev/null
# The shared library too, for the Python module (gpu_check.sh's lowp step):
# a second build, shared only (make all: the generated sources come first).
bs=$b-shared
rm -rf "$bs"
git clone -q "$top" "$bs"
git -C "$top" diff HEAD | git -C "$bs" apply --allow-empty
(cd "$bs" && ./autogen.sh >/dev/null 2>&1 &&
    ./configure --without-mpi --without-dnnl --disable-static >configure.out 2>&1 &&
    make -j"$(nproc)" >/dev/null) ||
    echo "gpu_bundle: the shared library did not build ($bs); gpu_check.sh's Python step will skip" >&2
g=$top/.gpu
rm -rf "$g"
mkdir -p "$g/bin" "$g/lib"
for t in polydnn tests/parity tests/test_* bench/bench_conv bench/bench_conv_bwd bench/bench_alloc; do
    [ -f "$t" ] && [ -x "$t" ] && file "$t" | grep -q ELF && cp "$t" "$g/bin/"
done
strip "$g"/bin/*
[ -f "$bs"/.libs/libpolydnn.so ] && cp -L "$bs"/.libs/libpolydnn.so "$g/lib/"
# Everything they load but the C and C++ runtimes, which that image has newer.
for f in "$g"/bin/* "$g"/lib/libpolydnn.so*; do [ -f "$f" ] && ldd "$f"; done | awk '/=>/ {print $3}' | sort -u |
    grep -v 'libc\.so\|libm\.so\|libgcc_s\|libstdc++\|libpthread\|libdl\.so\|librt\.so\|ld-linux\|libresolv\|libz\.so' |
    while read -r l; do cp -L "$l" "$g/lib/"; done
cat >"$g/polydnn" <<'WRAP'
#!/bin/sh
# polydnn with the carried libraries, for this process and its children only
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$d/lib:${PDNN_NV_LIBS:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/polydnn" "$@"
WRAP
chmod +x "$g/polydnn"
gd=$(git -C "$top" rev-parse --git-common-dir)
case $gd in /*) ;; *) gd=$top/$gd ;; esac
grep -qx '/.gpu/' "$gd/info/exclude" 2>/dev/null || echo '/.gpu/' >>"$gd/info/exclude"
du -sh "$g"
