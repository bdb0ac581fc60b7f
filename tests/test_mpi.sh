#!/bin/sh
# Distributed training over Open MPI on this one machine (mpirun
# --oversubscribe): the C API's checks (tests/mpi_api) at 1, 2 and 3 ranks;
# polydnn train --distributed mpi at 2 and 3 ranks against one process with
# the same global batch; heterogeneous ranks (PoCL and the host); a slow
# rank that outlasts the collective timeout while alive; a killed
# rank, a hung rank and a rank with bad input end the job within a bound
# with a message naming what failed, and the last checkpoint loads.
# Skips (77) in a build without MPI.
set -u
P=${POLYDNN_TOOL:-./polydnn}
B=${PDNN_TOP_BUILDDIR:-.}
MPIRUN=${MPIRUN:-$(command -v mpirun || true)}
if [ ! -x "$B/tests/mpi_api" ] || [ -z "$MPIRUN" ]; then
    echo "SKIP: polydnn was built without MPI (or mpirun is missing)"
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "${PDNN_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/mpi_env.sh"
RUN="$MPIRUN --oversubscribe"
# (mpi_env.sh chose the real polydnn binary, the kill test kills it)
[ -x "$B/tests/.libs/mpi_api" ] && API="$B/tests/.libs/mpi_api" || API="$B/tests/mpi_api"
elapsed() { echo $(( $(date +%s) - $1 )); }

echo "--- the C API at 1, 2 and 3 ranks"
"$API" > "$T/api1" 2>&1 || { cat "$T/api1"; fail "mpi_api, one rank"; }
for n in 2 3; do
    $RUN -np $n "$API" > "$T/api$n" 2>&1 || { cat "$T/api$n"; fail "mpi_api, $n ranks"; }
    [ "$(grep -c '^ok rank' "$T/api$n")" -eq $n ] || { cat "$T/api$n"; fail "mpi_api, $n ranks: not every rank ok"; }
done

# Small runs on the host device: 8 steps of a global batch of 6 (divisible
# by 1, 2 and 3 ranks) over 52 images: 52 = 8 x 6 + 4, so the last 4
# images of each epoch's order are left out (docs/distributed.md: uneven data). Small,
# because the sanitizer build runs the host's reference kernels slowly.
A="--batch-size 6 --train-limit 52 --test-limit 12 --epochs 1"
compare() { # compare.npz reference.npz what: equal within float tolerance
    /usr/bin/python3 - "$1" "$2" "$3" <<'PY' || fail "$3: weights differ from one process's"
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == sorted(b.files), (a.files, b.files)
for k in a.files:
    scale = max(1.0, float(np.abs(b[k]).max()))
    err = float(np.abs(a[k] - b[k]).max()) / scale
    assert err < 2e-5, "%s: %s off by %g" % (sys.argv[3], k, err)
assert a["global_step"].ravel()[0] == 8, a["global_step"]
PY
}
"$P" train $A --device /cpu:0 --save "$T/one.npz" > "$T/one.out" 2>&1 || { cat "$T/one.out"; fail "one process"; }

for n in 2 3; do
    echo "--- $n ranks on /cpu:0 against one process"
    $RUN -np $n "$P" train $A --distributed mpi --device /cpu:0 --save "$T/d$n.npz" > "$T/d$n.out" 2>&1 ||
        { cat "$T/d$n.out"; fail "$n ranks"; }
    grep -q "variables identical on all $n ranks" "$T/d$n.out" || { cat "$T/d$n.out"; fail "$n ranks: identical"; }
    grep -q "test accuracy" "$T/d$n.out" || fail "$n ranks: no accuracy line"
    [ "$(grep -c 'test accuracy' "$T/d$n.out")" -eq 1 ] || fail "$n ranks: ranks other than 0 printed"
    grep -q "all-reduce over $n ranks: 24 buckets" "$T/d$n.out" || fail "$n ranks: all-reduce statistics"
    compare "$T/d$n.npz" "$T/one.npz" "$n ranks"
done

echo "--- heterogeneous: rank 0 on /gpu:0 (OpenCL), rank 1 on /cpu:0"
$RUN -np 1 "$P" train $A --distributed mpi --device /gpu:0 --save "$T/het.npz" --log-device-placement : \
    -np 1 "$P" train $A --distributed mpi --device /cpu:0 --verbose > "$T/het.out" 2>&1 ||
    { cat "$T/het.out"; fail "heterogeneous ranks"; }
grep -q "variables identical on all 2 ranks" "$T/het.out" || { cat "$T/het.out"; fail "heterogeneous: identical"; }
grep -q "^Conv2D: (Conv2D): /job:worker/replica:0/task:0/device:GPU:0" "$T/het.out" ||
    fail "heterogeneous: rank 0's placement log"
grep -q "^\[rank 1\] epoch 1 step 8" "$T/het.out" || fail "heterogeneous: rank 1 --verbose"
compare "$T/het.npz" "$T/one.npz" "heterogeneous"

echo "--- a rank killed mid-training: the other ends, the checkpoint loads"
K="--batch-size 4 --train-limit 4000 --epochs 1 --device /cpu:0 --distributed mpi"
# Rank 1 differs by --test-limit 17, so that pkill finds it (and not mpirun,
# whose command line holds it too).
signal_rank1() { # SIGNAL FILE OUT COMMAND...: run it, and once FILE exists send rank 1 SIGNAL
    sig=$1 file=$2 out=$3
    shift 3
    "$@" > "$out" 2>&1 &
    job=$!
    n=0
    while [ ! -f "$file" ] && [ $n -lt 1500 ]; do sleep 0.2; n=$((n + 1)); done
    [ -f "$file" ] || echo "rank 0 wrote no checkpoint ($file) in 300 s" # the caller's checks then fail
    pkill -"$sig" -f "^[^ ]*polydnn train .*test-limit 17"
    wait $job
}
t0=$(date +%s)
signal_rank1 KILL "$T/k.npz" "$T/kill.out" $RUN -np 1 "$P" train $K --test-limit 16 --save "$T/k.npz" \
    --checkpoint-every 2 : -np 1 "$P" train $K --test-limit 17
rc=$?
dt=$(elapsed $t0)
[ $rc -ne 0 ] || { cat "$T/kill.out"; fail "killed rank: exit 0"; }
[ "$dt" -lt 150 ] || fail "killed rank: the job took $dt s to end"
grep -q "process rank 1 .*exited on signal 9" "$T/kill.out" || { cat "$T/kill.out"; fail "killed rank: no message naming rank 1"; }
"$P" train --batch-size 4 --train-limit 4000 --test-limit 16 --device /cpu:0 --load "$T/k.npz" --steps 1 \
    > "$T/resume.out" 2>&1 || { cat "$T/resume.out"; fail "the killed job's checkpoint does not load"; }

echo "--- a hung rank (stopped): the other times out and ends the job"
t0=$(date +%s)
signal_rank1 STOP "$T/h.npz" "$T/hang.out" $RUN -np 1 "$P" train $K --test-limit 16 --collective-timeout 20 \
    --save "$T/h.npz" --checkpoint-every 3 : -np 1 "$P" train $K --test-limit 17 --collective-timeout 20
rc=$?
dt=$(elapsed $t0)
pkill -KILL -f "^[^ ]*polydnn train .*test-limit 17" # in case Open MPI left it stopped
[ $rc -ne 0 ] || { cat "$T/hang.out"; fail "hung rank: exit 0"; }
[ "$dt" -lt 150 ] || fail "hung rank: the job took $dt s to end"
grep -q "collective timeout.*rank 1 has not been heard from" "$T/hang.out" && grep -q "rank 0 of 2 failed" "$T/hang.out" ||
    { cat "$T/hang.out"; fail "hung rank: no timeout message"; }

echo "--- a slow rank (computing past the timeout): heartbeats keep the others waiting"
# Rank 1 evaluates hundreds of test images, rank 0 a handful: rank 0 waits
# in the all-reduce of the test counts for several times the 1 s timeout,
# which only rank 1's heartbeats (sent while it computes) let it sit out.
# Fewer images where /cpu:0 runs the plain-C reference (no oneDNN).
slow=400
"$P" conv --algo help --device /cpu:0 2>/dev/null | grep -q "^| onednn | yes" && slow=2000
$RUN -np 1 "$P" train $A --distributed mpi --device /cpu:0 --collective-timeout 1 : \
    -np 1 "$P" train $A --distributed mpi --device /cpu:0 --collective-timeout 1 --test-limit $slow \
    > "$T/slow.out" 2>&1 || { cat "$T/slow.out"; fail "slow rank: the job failed"; }
grep -q "variables identical on all 2 ranks" "$T/slow.out" || { cat "$T/slow.out"; fail "slow rank: identical"; }

echo "--- bad input on one rank: every rank ends, naming it"
t0=$(date +%s)
$RUN -np 1 "$P" train $K : -np 1 "$P" train $K --data "$T/nowhere" > "$T/bad.out" 2>&1
rc=$?
[ $rc -ne 0 ] || { cat "$T/bad.out"; fail "bad input: exit 0"; }
[ "$(elapsed $t0)" -lt 60 ] || fail "bad input: too slow to end"
grep -q "nowhere" "$T/bad.out" && grep -q "rank 1 of 2 failed" "$T/bad.out" || { cat "$T/bad.out"; fail "bad input: message"; }

echo "--- ranks started with another --batch-size or --train-limit: refused before any collective"
# They used to all-reduce buffers of other sizes: MPI_ERR_TRUNCATE, then a
# stack-buffer-overflow in rank 1.
for c in "--batch-size 8:--batch-size: rank 0 has 6, rank 1 has 8" \
    "--train-limit 40:--train-limit (the training images used): rank 0 has 52, rank 1 has 40"; do
    flag=${c%%:*} want=${c#*:}
    $RUN -np 1 "$P" train $A --distributed mpi --device /cpu:0 : \
        -np 1 "$P" train $A --distributed mpi --device /cpu:0 $flag > "$T/agree.out" 2>&1 && fail "$flag: exit 0"
    grep -qF "the ranks disagree on $want" "$T/agree.out" || { cat "$T/agree.out"; fail "$flag: message"; }
    ! grep -q "MPI_ERR\|signal\|AddressSanitizer" "$T/agree.out" || { cat "$T/agree.out"; fail "$flag: crashed"; }
done

echo "--- usage: a batch that does not split over the ranks"
$RUN -np 3 "$P" train --batch-size 16 --distributed mpi --device /cpu:0 > "$T/split.out" 2>&1 && fail "batch 16 over 3 ranks"
grep -q "does not split evenly over 1 towers x 3 ranks" "$T/split.out" || { cat "$T/split.out"; fail "split message"; }
# For .ci/run's summary: each section above is one check.
echo "$(grep -c '^ *echo "--- ' "$0") passed, 0 failed"
echo "PASS"
