# PDNN_CHECK_MPI: --with-mpi[=yes|no|auto] (default auto).
# Distributed training (pdnn_session_config.distributed, polydnn train
# --distributed mpi) speaks MPI's standard C API; Open MPI is the engine
# the project targets (Debian: libopenmpi-dev, openmpi-bin). Found through
# pkg-config (ompi-c, else mpi), else by linking MPI_Init with mpicc's
# flags. Without it everything else builds and runs single-process.
AC_DEFUN([PDNN_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi],
      [distributed training over MPI (default: auto; Debian: apt-get install libopenmpi-dev openmpi-bin)])],
    [], [with_mpi=auto])
  pdnn_have_mpi=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [pdnn_have_mpi=pkg],
      [PKG_CHECK_MODULES([MPI], [mpi], [pdnn_have_mpi=pkg], [pdnn_have_mpi=no])])
    AS_IF([test "x$pdnn_have_mpi" = xno], [
      AC_PATH_PROG([MPICC_FOR_FLAGS], [mpicc])
      AS_IF([test -n "$MPICC_FOR_FLAGS"], [
        MPI_CFLAGS=`$MPICC_FOR_FLAGS --showme:compile 2>/dev/null`
        MPI_LIBS=`$MPICC_FOR_FLAGS --showme:link 2>/dev/null`
        pdnn_have_mpi=pkg])
    ])
    AS_IF([test "x$pdnn_have_mpi" = xpkg], [
      pdnn_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"
      pdnn_save_LIBS="$LIBS"; LIBS="$MPI_LIBS $LIBS"
      AC_MSG_CHECKING([whether MPI's C API links (MPI_Iallreduce)])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
        MPI_Request r; float v = 0;
        return MPI_Iallreduce(MPI_IN_PLACE, &v, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);]])],
        [pdnn_have_mpi=yes], [pdnn_have_mpi=no])
      AC_MSG_RESULT([$pdnn_have_mpi])
      CPPFLAGS="$pdnn_save_CPPFLAGS"
      LIBS="$pdnn_save_LIBS"
    ])
    AS_IF([test "x$with_mpi" = xyes && test "x$pdnn_have_mpi" != xyes],
      [AC_MSG_ERROR([--with-mpi given but no MPI library links (apt-get install libopenmpi-dev openmpi-bin)])])
  ])
  AS_IF([test "x$pdnn_have_mpi" = xyes], [
    AC_DEFINE([PDNN_HAVE_MPI], [1], [distributed training over MPI])
    AC_PATH_PROG([MPIRUN], [mpirun])
  ], [MPI_CFLAGS=""; MPI_LIBS=""])
  AM_CONDITIONAL([HAVE_MPI], [test "x$pdnn_have_mpi" = xyes])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPIRUN])
])
