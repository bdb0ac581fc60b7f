# PDNN_CHECK_ONNX: ONNX import (src/io/onnx_import.c). The protobuf-c code is
# generated at build time with protoc-c from the onnx.proto that Debian's
# python3-onnx installs (or --with-onnx-proto=FILE); the schema is never
# copied into the repository. Without protoc-c, libprotobuf-c or the schema,
# the library still builds and pdnn_graph_import_onnx says why it can't.
AC_DEFUN([PDNN_CHECK_ONNX], [
  AC_ARG_WITH([onnx-proto],
    [AS_HELP_STRING([--with-onnx-proto=FILE],
      [onnx.proto to generate the ONNX parser from (default: auto, python3-onnx's; no: disable ONNX import)])],
    [], [with_onnx_proto=auto])
  pdnn_have_onnx=no
  pdnn_onnx_why=""
  ONNX_PROTO=""
  PROTOBUF_C_CFLAGS=""
  PROTOBUF_C_LIBS=""
  AS_IF([test "x$with_onnx_proto" = xno], [pdnn_onnx_why="(disabled by --without-onnx-proto)"], [
    AS_CASE([$with_onnx_proto],
      [yes|auto], [
        for pdnn_f in /usr/lib/python3/dist-packages/onnx/onnx.proto; do
          AS_IF([test -r "$pdnn_f"], [ONNX_PROTO=$pdnn_f; break])
        done
        AS_IF([test -z "$ONNX_PROTO"], [
          for pdnn_py in $PYTHON python3 /usr/bin/python3; do
            pdnn_f=`$pdnn_py -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "onnx.proto"))' 2>/dev/null`
            AS_IF([test -n "$pdnn_f" && test -r "$pdnn_f"], [ONNX_PROTO=$pdnn_f; break])
          done
        ])],
      [ONNX_PROTO=$with_onnx_proto])
    AC_MSG_CHECKING([for onnx.proto])
    AS_IF([test -n "$ONNX_PROTO" && test -r "$ONNX_PROTO"], [AC_MSG_RESULT([$ONNX_PROTO])],
      [AC_MSG_RESULT([no]); ONNX_PROTO=""])
    AC_PATH_PROG([PROTOC_C], [protoc-c], [])
    AC_MSG_CHECKING([for libprotobuf-c])
    AS_IF([pkg-config --exists libprotobuf-c 2>/dev/null], [
      PROTOBUF_C_CFLAGS=`pkg-config --cflags libprotobuf-c`
      PROTOBUF_C_LIBS=`pkg-config --libs libprotobuf-c`
      AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no])])
    AS_IF([test -z "$ONNX_PROTO"], [pdnn_onnx_why="(no onnx.proto: apt-get install python3-onnx, or --with-onnx-proto=FILE)"],
          [test -z "$PROTOC_C"], [pdnn_onnx_why="(no protoc-c: apt-get install protobuf-c-compiler)"],
          [test -z "$PROTOBUF_C_LIBS"], [pdnn_onnx_why="(no libprotobuf-c: apt-get install libprotobuf-c-dev)"],
          [pdnn_have_onnx=yes])
    AS_IF([test "x$with_onnx_proto" != xauto && test "x$pdnn_have_onnx" != xyes],
      [AC_MSG_ERROR([--with-onnx-proto given but ONNX import cannot be built $pdnn_onnx_why])])
  ])
  AS_IF([test "x$pdnn_have_onnx" = xyes],
    [AC_DEFINE([PDNN_HAVE_ONNX], [1], [ONNX import is built (protobuf-c code generated from onnx.proto)])])
  AM_CONDITIONAL([HAVE_ONNX], [test "x$pdnn_have_onnx" = xyes])
  AC_SUBST([ONNX_PROTO])
  AC_SUBST([PROTOBUF_C_CFLAGS])
  AC_SUBST([PROTOBUF_C_LIBS])
])
