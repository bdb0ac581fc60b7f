# PDNN_CHECK_CLBLAST: --with-clblast=yes|no|auto (default auto).
AC_DEFUN([PDNN_CHECK_CLBLAST], [
  AC_ARG_WITH([clblast],
    [AS_HELP_STRING([--with-clblast], [use CLBlast for OpenCL GEMM (default: auto)])],
    [], [with_clblast=auto])
  pdnn_have_clblast=no
  AS_IF([test "x$with_clblast" != xno], [
    PKG_CHECK_MODULES([CLBLAST], [clblast], [pdnn_have_clblast=yes], [
      pdnn_save_LIBS="$LIBS"
      AC_CHECK_LIB([clblast], [CLBlastSgemm], [CLBLAST_LIBS="-lclblast"; pdnn_have_clblast=yes], [], [$OPENCL_LIBS])
      LIBS="$pdnn_save_LIBS"
    ])
    AS_IF([test "x$pdnn_have_clblast" = xyes], [
      pdnn_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $CLBLAST_CFLAGS $OPENCL_CFLAGS"
      AC_CHECK_HEADER([clblast_c.h], [], [pdnn_have_clblast=no])
      CPPFLAGS="$pdnn_save_CPPFLAGS"])
    AS_IF([test "x$with_clblast" = xyes && test "x$pdnn_have_clblast" != xyes],
      [AC_MSG_ERROR([--with-clblast given but CLBlast was not found (apt-get install libclblast-dev)])])
  ])
  AS_IF([test "x$pdnn_have_clblast" = xyes], [AC_DEFINE([PDNN_HAVE_CLBLAST], [1], [CLBlast is available])],
        [CLBLAST_LIBS=""; CLBLAST_CFLAGS=""])
  AM_CONDITIONAL([HAVE_CLBLAST], [test "x$pdnn_have_clblast" = xyes])
  AC_SUBST([CLBLAST_CFLAGS])
  AC_SUBST([CLBLAST_LIBS])
])
