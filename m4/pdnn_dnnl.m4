# PDNN_CHECK_DNNL: --with-dnnl[=DIR]|--without-dnnl (default auto).
# oneDNN is the CPU peer of `polydnn bench` (the tool links it) and, where
# its C API is 2.x, the host backend's fast algorithms (backends/host/
# host_dnnl.c; the library links it then, HAVE_DNNL_HOST). Its C API
# changed in 3.0 (primitive descriptors made in one call, memory
# descriptors became handles); tools/peer_dnnl.c speaks both, so the check
# links the entry point of the version found. With an OpenMP build the
# host backend sets its thread count (omp_set_num_threads), so libgomp is
# linked too.
AC_DEFUN([PDNN_CHECK_DNNL], [
  AC_ARG_WITH([dnnl],
    [AS_HELP_STRING([--with-dnnl@<:@=DIR@:>@],
      [run the host backend (/cpu:0) on oneDNN and use it as polydnn bench's CPU peer (default: auto; DIR holds include/ and lib/)])],
    [], [with_dnnl=auto])
  pdnn_have_dnnl=no
  DNNL_CFLAGS=""
  DNNL_LIBS=""
  AS_IF([test "x$with_dnnl" != xno], [
    AS_CASE([$with_dnnl],
      [yes|auto], [],
      [DNNL_CFLAGS="-I$with_dnnl/include"; DNNL_LIBS="-L$with_dnnl/lib"])
    DNNL_LIBS="$DNNL_LIBS -ldnnl"
    pdnn_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $DNNL_CFLAGS"
    pdnn_save_LIBS="$LIBS"; LIBS="$DNNL_LIBS $LIBS"
    AC_MSG_CHECKING([for oneDNN (dnnl) with a convolution API polydnn bench speaks])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <oneapi/dnnl/dnnl.h>]], [[
#if DNNL_VERSION_MAJOR >= 3
      void (*volatile f)(void) = (void (*)(void))dnnl_convolution_forward_primitive_desc_create;
#else
      void (*volatile f)(void) = (void (*)(void))dnnl_dilated_convolution_forward_desc_init;
#endif
      return f == 0 || dnnl_version() == 0;]])],
      [pdnn_have_dnnl=yes], [pdnn_have_dnnl=no])
    AC_MSG_RESULT([$pdnn_have_dnnl])
    CPPFLAGS="$pdnn_save_CPPFLAGS"
    LIBS="$pdnn_save_LIBS"
    AS_IF([test "x$with_dnnl" != xauto && test "x$pdnn_have_dnnl" != xyes],
      [AC_MSG_ERROR([--with-dnnl given but oneDNN was not found (apt-get install libdnnl-dev)])])
  ])
  pdnn_dnnl_host=no
  AS_IF([test "x$pdnn_have_dnnl" = xyes], [
    pdnn_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $DNNL_CFLAGS"
    AC_MSG_CHECKING([whether oneDNN's C API is 2.x (the host backend's algorithms)])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <oneapi/dnnl/dnnl.h>]], [[
#if DNNL_VERSION_MAJOR != 2
#error not 2.x
#endif
]])], [pdnn_dnnl_host=yes])
    AC_MSG_RESULT([$pdnn_dnnl_host])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <oneapi/dnnl/dnnl.h>]], [[
#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP
#error not OpenMP
#endif
]])], [AS_IF([test "x$pdnn_dnnl_host" = xyes],
        [AC_CHECK_LIB([gomp], [omp_set_num_threads], [DNNL_LIBS="$DNNL_LIBS -lgomp"], [pdnn_dnnl_host=no])])])
    CPPFLAGS="$pdnn_save_CPPFLAGS"
  ])
  AS_IF([test "x$pdnn_have_dnnl" = xyes],
    [AC_DEFINE([PDNN_HAVE_DNNL], [1], [oneDNN is available as the bench tool's CPU peer])],
    [DNNL_CFLAGS=""; DNNL_LIBS=""])
  dnnl_host_libs=""
  AS_IF([test "x$pdnn_dnnl_host" = xyes],
    [AC_DEFINE([PDNN_HAVE_DNNL_HOST], [1], [the host backend runs oneDNN algorithms beside its reference])
     dnnl_host_libs="$DNNL_LIBS"])
  dnl What libpolydnn.a itself needs of oneDNN (polydnn.pc's Libs.private):
  dnl nothing where only the bench tool links it.
  AC_SUBST([DNNL_HOST_LIBS], [$dnnl_host_libs])
  AM_CONDITIONAL([HAVE_DNNL], [test "x$pdnn_have_dnnl" = xyes])
  AM_CONDITIONAL([HAVE_DNNL_HOST], [test "x$pdnn_dnnl_host" = xyes])
  AC_SUBST([DNNL_CFLAGS])
  AC_SUBST([DNNL_LIBS])
])
