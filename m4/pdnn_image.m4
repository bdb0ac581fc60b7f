# PDNN_CHECK_IMAGE: --with-png / --with-jpeg (default auto each; =no
# leaves the format out). The polydnn tool reads PNG through libpng and
# JPEG through libjpeg-turbo (polydnn run --input cat.png; tools/image.c);
# the library never links them. Without one, run refuses that format and
# names the package (docs/building.md).
AC_DEFUN([PDNN_CHECK_IMAGE], [
  AC_ARG_WITH([png],
    [AS_HELP_STRING([--with-png], [read PNG inputs in polydnn run through libpng (default: auto)])],
    [], [with_png=auto])
  AC_ARG_WITH([jpeg],
    [AS_HELP_STRING([--with-jpeg], [read JPEG inputs in polydnn run through libjpeg(-turbo) (default: auto)])],
    [], [with_jpeg=auto])
  pdnn_have_png=no
  AS_IF([test "x$with_png" != xno], [
    PKG_CHECK_MODULES([PNG], [libpng], [pdnn_have_png=yes],
      [AC_CHECK_LIB([png], [png_create_read_struct],
        [AC_CHECK_HEADER([png.h], [pdnn_have_png=yes; PNG_LIBS=-lpng; PNG_CFLAGS=])])])
    AS_IF([test "x$with_png" = xyes && test "x$pdnn_have_png" != xyes],
      [AC_MSG_ERROR([--with-png given but libpng was not found (apt-get install libpng-dev)])])
  ])
  pdnn_have_jpeg=no
  AS_IF([test "x$with_jpeg" != xno], [
    PKG_CHECK_MODULES([JPEG], [libjpeg], [pdnn_have_jpeg=yes],
      [AC_CHECK_LIB([jpeg], [jpeg_read_header],
        [AC_CHECK_HEADER([jpeglib.h], [pdnn_have_jpeg=yes; JPEG_LIBS=-ljpeg; JPEG_CFLAGS=], [],
          [#include <stdio.h>])])])
    AS_IF([test "x$with_jpeg" = xyes && test "x$pdnn_have_jpeg" != xyes],
      [AC_MSG_ERROR([--with-jpeg given but libjpeg was not found (apt-get install libjpeg62-turbo-dev)])])
  ])
  AS_IF([test "x$pdnn_have_png" = xyes],
    [AC_DEFINE([PDNN_HAVE_PNG], [1], [polydnn run reads PNG through libpng])],
    [PNG_CFLAGS=""; PNG_LIBS=""])
  AS_IF([test "x$pdnn_have_jpeg" = xyes],
    [AC_DEFINE([PDNN_HAVE_JPEG], [1], [polydnn run reads JPEG through libjpeg])],
    [JPEG_CFLAGS=""; JPEG_LIBS=""])
  AC_SUBST([PNG_CFLAGS])
  AC_SUBST([PNG_LIBS])
  AC_SUBST([JPEG_CFLAGS])
  AC_SUBST([JPEG_LIBS])
])
