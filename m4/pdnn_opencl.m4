# PDNN_CHECK_OPENCL: the OpenCL ICD loader and headers (required).
AC_DEFUN([PDNN_CHECK_OPENCL], [
  PKG_CHECK_MODULES([OPENCL], [OpenCL], [pdnn_have_opencl=yes], [
    dnl no .pc file: try the plain library
    pdnn_save_LIBS="$LIBS"
    AC_CHECK_LIB([OpenCL], [clGetPlatformIDs],
      [OPENCL_LIBS="-lOpenCL"; OPENCL_CFLAGS=""; pdnn_have_opencl=yes],
      [pdnn_have_opencl=no])
    LIBS="$pdnn_save_LIBS"
  ])
  pdnn_save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $OPENCL_CFLAGS"
  AC_CHECK_HEADER([CL/cl.h], [], [pdnn_have_opencl=no])
  CPPFLAGS="$pdnn_save_CPPFLAGS"
  AS_IF([test "x$pdnn_have_opencl" != xyes],
    [AC_MSG_ERROR([OpenCL (CL/cl.h and libOpenCL) is required: on Debian, apt-get install ocl-icd-opencl-dev opencl-headers pocl-opencl-icd])])
  AC_DEFINE([PDNN_HAVE_OPENCL], [1], [Build the OpenCL backend])
  AC_SUBST([OPENCL_CFLAGS])
  AC_SUBST([OPENCL_LIBS])
])
