#!/bin/sh
# make check-install: make install into a temporary DESTDIR, then use the
# install as its users would:
#   - README's C example, built with pkg-config against the shared library
#     and, with --static, against libpolydnn.a alone (so Libs.private must
#     name everything the archive needs: OpenCL, CLBlast, MPI, protobuf-c);
#   - the man page (man -l renders it) and the bash completion, where
#     configure said;
#   - the installed Python module, and pip install ./python into a venv.
# Usage: check_install.sh SRCDIR [PYTHON]; run in the build directory.
set -eu
src=$1
py=${2:-python3}
[ -n "$py" ] || py=python3
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
make install DESTDIR="$dest" >/dev/null
prefix=$(sed -n 's/^prefix=//p' polydnn.pc)
libdir=$(PKG_CONFIG_PATH= pkg-config --variable=libdir ./polydnn.pc)
pcdir="$dest$libdir/pkgconfig"
export PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$dest"
ok() { echo "ok: $*"; }

awk '/^```c$/ { f = 1; next } /^```$/ { f = 0 } f' "$src/README.md" >"$dest/example.c"
test -s "$dest/example.c"
# shared
cc -std=c11 -Wall -Wextra -Werror "$dest/example.c" $(pkg-config --cflags --libs polydnn) -o "$dest/example-shared"
LD_LIBRARY_PATH="$dest$libdir" "$dest/example-shared"
ok "README's C example, shared: cc example.c \$(pkg-config --cflags --libs polydnn)"
# static: the archive by name, so that the shared library beside it is not
# taken, and whole, so that every object's dependencies must be in
# Libs.private (a small program pulls only a few objects of the archive).
static_libs=$(pkg-config --static --libs polydnn |
    sed 's/-lpolydnn\b/-Wl,--whole-archive -l:libpolydnn.a -Wl,--no-whole-archive/')
case $static_libs in *-l:libpolydnn.a*) ;; *) echo "pkg-config --static --libs polydnn lacks -lpolydnn: $static_libs"; exit 1 ;; esac
cc -std=c11 -Wall -Wextra -Werror "$dest/example.c" $(pkg-config --cflags polydnn) $static_libs -o "$dest/example-static"
if readelf -d "$dest/example-static" | grep -q 'libpolydnn'; then
    echo "the static build still needs libpolydnn.so"; exit 1
fi
"$dest/example-static"
ok "README's C example, static: libpolydnn.a with \$(pkg-config --static --libs polydnn)"
grep -q '^Description: .*graphs' "$pcdir/polydnn.pc"

# the man page and the bash completion
mandir=$(sed -n "s|^mandir = ||p" Makefile | sed "s|\${datarootdir}|$prefix/share|; s|\${prefix}|$prefix|")
test -f "$dest$mandir/man1/polydnn.1"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$dest$mandir/man1/polydnn.1" 2>/dev/null | grep -q 'EXIT STATUS'
fi
ok "man page: $mandir/man1/polydnn.1"
bcdir=$(sed -n "s|^bashcompletiondir = ||p" Makefile | sed "s|\${datarootdir}|$prefix/share|; s|\${prefix}|$prefix|")
test -f "$dest$bcdir/polydnn"
ok "bash completion: $bcdir/polydnn"

# the installed Python module, with the library it records (_build_config)
if "$py" -c 'import numpy' >/dev/null 2>&1; then
    pydir=$(find "$dest" -type d -name polydnn -path '*-packages/*' | head -n 1)
    test -f "$pydir/__init__.py" && test -f "$pydir/_build_config.py"
    (cd "$dest" && PYTHONPATH="$(dirname "$pydir")" POLYDNN_LIBRARY="$dest$libdir/libpolydnn.so.1" "$py" -c '
import polydnn, numpy
y = polydnn.max_pool2d(polydnn.from_dlpack(numpy.ones((1, 2, 4, 4), "float32")), 2)
assert y.shape == (1, 2, 2, 2) and float(y.numpy().sum()) == 8.0
print("installed module:", polydnn.__version__, polydnn.version())')
    ok "the installed Python module"
    PDNN_TOP_SRCDIR=$src PDNN_TOP_BUILDDIR=$PWD PYTHON_TORCH=$py sh "$src/tests/test_pip_install.sh"
fi
echo "check-install: passed"
