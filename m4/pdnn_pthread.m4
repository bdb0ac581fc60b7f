# AX_PTHREAD_SIMPLE: POSIX threads via -pthread (glibc, musl, BSDs).
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  AC_CHECK_HEADER([pthread.h], [], [AC_MSG_ERROR([pthread.h is required])])
  CFLAGS="$CFLAGS -pthread"
  LDFLAGS="$LDFLAGS -pthread"
])
