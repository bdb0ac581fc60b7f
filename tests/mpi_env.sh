# Open MPI's settings for the tests that run mpirun on this one machine
# (sourced by test_mpi.sh and test_mpi_model.sh, which set B, the build
# directory, and P, the tool).
# CI runs as root; Open MPI refuses root unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keep Open MPI on shared memory and loopback TCP (no probing of other
# networks on CI machines).
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
# Containers often forbid the cross-process reads (ptrace scope) that
# vader's single-copy path uses: copy through the shared segment.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Sanitizer builds: Open MPI's components stay loaded, and LeakSanitizer
# unwinds fully, so that tests/lsan.supp's Open MPI entries match their
# allocations (the fast unwinder stops inside them).
export OMPI_MCA_mca_base_component_disable_dlclose=1
if [ "${PDNN_SANITIZERS:-no}" = yes ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
fi
# libtool's wrapper is a shell script: run the real binary, so that each
# rank is one process, with the built library.
[ -x "$B/.libs/polydnn" ] && P="$B/.libs/polydnn"
[ -x "$B/.libs/lt-polydnn" ] && P="$B/.libs/lt-polydnn"
export LD_LIBRARY_PATH="$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
