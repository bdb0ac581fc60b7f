# PDNN_CHECK_CUDA: --with-cuda[=DIR] (auto-detects /usr/local/cuda) and
# --with-cudnn[=DIR]. The CUDA backend (backends/cuda) is built when both
# headers are found. It compiles against the headers only and loads
# libcudart, libcudnn and libcublas with dlopen at run time, so a library
# built with CUDA loads and works on machines without them or a driver.
AC_DEFUN([PDNN_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit location (default: auto, /usr/local/cuda)])],
    [], [with_cuda=auto])
  AC_ARG_WITH([cudnn],
    [AS_HELP_STRING([--with-cudnn@<:@=DIR@:>@], [cuDNN location (default: auto, the CUDA directory)])],
    [], [with_cudnn=auto])
  pdnn_have_cuda=no
  pdnn_have_cudnn=no
  pdnn_cuda_why=""
  AS_CASE(["$with_cuda"],
    [no], [pdnn_cuda_dir=""; pdnn_cuda_why="(--without-cuda)"],
    [yes|auto], [pdnn_cuda_dir=/usr/local/cuda],
    [pdnn_cuda_dir="$with_cuda"])
  AS_IF([test -n "$pdnn_cuda_dir"], [
    AS_IF([test -f "$pdnn_cuda_dir/include/cuda_runtime.h"], [
      for pdnn_d in "$pdnn_cuda_dir/lib64" "$pdnn_cuda_dir/lib" "$pdnn_cuda_dir/targets/x86_64-linux/lib"; do
        AS_IF([test -z "$CUDA_LIBDIR" && test -e "$pdnn_d/libcudart.so"], [CUDA_LIBDIR="$pdnn_d"])
      done
      AS_IF([test -n "$CUDA_LIBDIR"], [
        pdnn_have_cuda=yes
        CUDA_CFLAGS="-I$pdnn_cuda_dir/include"
        CUDA_LIBS=""
        pdnn_cuda_why="($pdnn_cuda_dir)"
      ], [pdnn_cuda_why="(no libcudart in $pdnn_cuda_dir)"])
    ], [pdnn_cuda_why="(no $pdnn_cuda_dir/include/cuda_runtime.h)"])
    AS_IF([test "x$with_cuda" != xauto && test "x$pdnn_have_cuda" != xyes],
      [AC_MSG_ERROR([--with-cuda given but CUDA was not found $pdnn_cuda_why])])
  ])
  AS_IF([test "x$pdnn_have_cuda" = xyes && test "x$with_cudnn" != xno], [
    AS_CASE(["$with_cudnn"], [yes|auto], [pdnn_cudnn_dir="$pdnn_cuda_dir"], [pdnn_cudnn_dir="$with_cudnn"])
    for pdnn_h in "$pdnn_cudnn_dir/include/cudnn.h" /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h; do
      AS_IF([test "x$pdnn_have_cudnn" = xno && test -f "$pdnn_h"], [pdnn_have_cudnn=yes])
    done
    AS_IF([test "x$with_cudnn" != xauto && test "x$pdnn_have_cudnn" != xyes],
      [AC_MSG_ERROR([--with-cudnn given but cudnn.h was not found under $pdnn_cudnn_dir])])
  ])
  AC_MSG_CHECKING([for CUDA])
  AC_MSG_RESULT([$pdnn_have_cuda $pdnn_cuda_why])
  AC_MSG_CHECKING([for cuDNN])
  AC_MSG_RESULT([$pdnn_have_cudnn])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$pdnn_have_cuda" = xyes])
  pdnn_cuda_backend="no (needs the CUDA toolkit and cuDNN)"
  AS_IF([test "x$pdnn_have_cuda" = xyes && test "x$pdnn_have_cudnn" = xyes], [
    pdnn_cuda_backend="yes (cuDNN + cuBLAS, loaded at run time)"
    AS_IF([test "x$pdnn_cudnn_dir" != "x$pdnn_cuda_dir"], [CUDA_CFLAGS="$CUDA_CFLAGS -I$pdnn_cudnn_dir/include"])
    AC_DEFINE([PDNN_HAVE_CUDA], [1], [Build the CUDA backend (cuDNN, cuBLAS, loaded at run time)])
    AC_DEFINE_UNQUOTED([PDNN_CUDA_LIBDIR], ["$CUDA_LIBDIR"], [Where the CUDA libraries were at build time])
  ])
  AM_CONDITIONAL([HAVE_CUDA_BACKEND], [test "x$pdnn_have_cuda" = xyes && test "x$pdnn_have_cudnn" = xyes])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
])
