#!/bin/sh
# Distributed training's all-reduce cost and overlap on this machine, side
# by side in one run (bench/results-allreduce.md):
#   1. bench/bench_allreduce for the Deep MNIST (Fashion-MNIST) model and
#      ResNet-50 at 2 and 3 ranks: ms per step computing only, all-reducing
#      only, both one after the other, and overlapped;
#   2. polydnn train --distributed mpi on Fashion-MNIST at 1, 2 and 3
#      ranks, overlapped and not (images/s and the all-reduce line).
# Usage: bench/allreduce_bench.sh [DEVICE] (default /gpu:0), from the build
# directory of a build with MPI.
set -eu
DEV=${1:-/gpu:0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RUN="mpirun --oversubscribe"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
    "$(mpirun --version | head -n 1); device $DEV"
echo
echo "| model | ranks | device | batch per rank | parameters / gradient bytes | buckets per step | compute ms | all-reduce ms | serial ms | overlapped ms | hidden (step times) | hidden (session's wait) |"
echo "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in 2 3; do
    $RUN -np $n bench/bench_allreduce mnist "$DEV" 64 10 | grep '^|'
    $RUN -np $n bench/bench_allreduce resnet50 "$DEV" 2 5 | grep '^|'
done
echo
echo "polydnn train --distributed mpi (Fashion-MNIST, global batch 192, 40 steps):"
echo
echo "| ranks | overlap | images/s | all-reduce line (rank 0) |"
echo "| ---: | --- | ---: | --- |"
A="--device $DEV --batch-size 192 --train-limit 7680 --test-limit 192 --epochs 1"
ips() { sed -n 's/.*steps: \([0-9.]*\) images\/s.*/\1/p' "$1"; }
./polydnn train $A > /tmp/ar1.$$ 2>/dev/null
echo "| 1 | - | $(ips /tmp/ar1.$$) | - |"
for n in 2 3; do
    for ov in yes no; do
        flag=""
        [ $ov = no ] && flag=--no-overlap
        $RUN -np $n ./polydnn train $A --distributed mpi $flag > /tmp/ar$n.$$ 2>/dev/null
        echo "| $n | $ov | $(ips /tmp/ar$n.$$) | $(grep '^all-reduce' /tmp/ar$n.$$ | sed 's/^all-reduce over [0-9]* ranks: //') |"
    done
done
rm -f /tmp/ar1.$$ /tmp/ar2.$$ /tmp/ar3.$$
