# PDNN_CHECK_CRITERION: the Criterion test framework (optional; without it
# `make check` says the tests were not built and fails, so nobody mistakes
# a build without tests for a passing one).
AC_DEFUN([PDNN_CHECK_CRITERION], [
  PKG_CHECK_MODULES([CRITERION], [criterion], [pdnn_have_criterion=yes], [pdnn_have_criterion=no])
  AM_CONDITIONAL([HAVE_CRITERION], [test "x$pdnn_have_criterion" = xyes])
])
