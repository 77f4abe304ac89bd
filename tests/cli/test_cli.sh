#!/usr/bin/env bash
# End-to-end tests of the `ctensor` program on a small synthetic dataset in
# the real IDX format (512 train / 256 test 28x28 images).
#
#   test_cli.sh CASE CTENSOR MAKE_IDX ST_TOOL WORKDIR
#
# Cases: e2e (train 2 epochs, metrics, eval = last metrics line, --deterministic), resume_epoch
# (2 epochs straight = 1 epoch + --resume to 2, bit for bit), resume_sigint
# (SIGINT mid-epoch, --resume, bit for bit), stale_save (the temporaries of
# killed saves are removed by the next run, and nothing else), amp (--amp: f16 with
# loss scaling, SIGINT and --resume bit for bit), dist (2 processes under
# mpiexec: rank 0 alone reports and saves, SIGINT and --resume bit for bit;
# skipped, exit 77, without MPI), errors (exit codes and messages of bad
# input), data_errors (empty, mislabeled, cut or mis-named data and
# checkpoint files: clear errors, names escaped), output_errors (metrics,
# results or checkpoints that cannot be written: exit 1 with the reason,
# before training where it can be known), vision (--model resnet and vit: their
# default optimizers, SIGINT and --resume bit for bit, BatchNorm buffers in the
# checkpoint, eval = the last epoch's test accuracy), device (the line each command prints
# first: the device and why, model, data, precision, threads; --device cuda and CT_DEVICE=cuda
# without a usable GPU fail with the reason; a damaged CUDA backend leaves the CPU path
# working and is named as the reason). CT_TEST_DEVICE (default cpu) is the device the
# program trains on (the e2e case runs on the emulated GPU too).
set -u
CASE=$1 CT=$2 MAKE_IDX=$3 ST=$4 WORK=$5
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" # before the cd: the path may be relative
rm -rf "$WORK" && mkdir -p "$WORK/data" || exit 1
cd "$WORK" || exit 1
"$MAKE_IDX" data 512 256 || { echo "FAIL: cannot make the dataset"; exit 1; }
export OMP_NUM_THREADS=2 CT_DEVICE=${CT_TEST_DEVICE:-cpu}

COMMON=(--data-dir data --limit-train 512 --limit-test 256 --batch-size 32 --quiet)

case $CASE in
e2e)
  run train 0 "$CT" train --model mlp --epochs 2 --checkpoint ck.safetensors --metrics m.jsonl \
    --data-dir data --batch-size 32 --lr 0.05 --limit-train 384 --limit-test 200 && pass "train exits 0"
  expect_text "train prints the final accuracy" train.out '^test accuracy: [0-9.]+% \([0-9]+/200\)'
  expect_text "train prints per-epoch lines" train.out '^epoch 2/2: loss'
  expect_text "non-tty progress lines" train.err 'epoch 1/2: batch 12/12 \(100%\)'
  if [ "$CT_DEVICE" = cpu ]; then dev_re='cpu \(CT_DEVICE=cpu\)'; else dev_re="$CT_DEVICE \(.+, [0-9.]+ GiB\)"; fi
  expect_text "train names its device first" train.err "^device $dev_re .* model mlp "
  [ "$(wc -l <m.jsonl)" -eq 2 ] && pass "2 metrics lines" || fail "metrics has $(wc -l <m.jsonl) lines"
  for key in epoch loss accuracy lr seconds images_per_second data_wait_seconds; do
    [ "$(grep -c "\"$key\": " m.jsonl)" -eq 2 ] || fail "metrics key $key missing"
  done
  pass "metrics keys"
  if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; [json.loads(l) for l in open("m.jsonl")]' && pass "metrics are JSON" ||
      fail "metrics are not JSON"
  fi
  acc=$(tail -1 m.jsonl | sed -E 's/.*"test_correct": ([0-9]+).*/\1/')
  run eval 0 "$CT" eval --checkpoint ck.safetensors --data-dir data && pass "eval exits 0"
  expect_text "eval accuracy = last metrics line ($acc/200)" eval.out "^test accuracy: [0-9.]+% \($acc/200\)"
  expect_text "eval names the model" eval.out 'model mlp, dataset fashion-mnist, 2 epoch'
  awk -v a="$acc" 'BEGIN { exit !(a >= 100) }' && pass "learned the synthetic task ($acc/200)" ||
    fail "accuracy $acc/200 too low"
  run info 0 "$CT" info && expect_text "info shows BLAS" info.out '^blas: OpenBLAS'
  expect_text "info shows the version" info.out '^ctensor [0-9]+\.[0-9]+\.[0-9]+'
  # OpenBLAS runs the kernels the CPU allows: an OpenBLAS older than the CPU takes it for a
  # Prescott (SSE3 only, several times slower) unless ctensor chooses; a core type the user
  # sets is kept
  sse_cores='(Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Opteron|Opteron_SSE3|Barcelona|Bobcat|Katmai|Coppermine)'
  if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then
    ! grep -Eq "^blas: OpenBLAS .* $sse_cores " info.out && pass "OpenBLAS uses AVX2 or AVX-512 kernels on this CPU" ||
      fail "OpenBLAS runs SSE-only kernels on a CPU with AVX2: $(grep '^blas:' info.out)"
  fi
  run infocore 0 env OPENBLAS_CORETYPE=Prescott "$CT" info &&
    expect_text "OPENBLAS_CORETYPE set by the user is kept" infocore.out '^blas: OpenBLAS .* Prescott '
  # --deterministic sets the library's flag (the header says so); two runs agree bit for bit
  DET=(train --model mlp --epochs 1 --data-dir data --batch-size 32 --limit-train 128 --limit-test 64 --deterministic)
  run det1 0 "$CT" "${DET[@]}" --checkpoint d1.safetensors && pass "train --deterministic exits 0"
  expect_text "--deterministic turns the flag on" det1.out ', deterministic algorithms,'
  run det2 0 "$CT" "${DET[@]}" --checkpoint d2.safetensors &&
    "$ST" compare d1.safetensors d2.safetensors >detcmp.out 2>&1 && pass "--deterministic runs agree bit for bit" ||
    { fail "two --deterministic runs differ"; cat detcmp.out; }
  run nodet 0 "$CT" train --model mlp --epochs 1 --data-dir data --limit-train 64 --limit-test 32 &&
    ! grep -q 'deterministic' nodet.out && pass "without --deterministic the flag stays off" ||
    fail "the flag is on without --deterministic"
  ;;

device)
  SEP=$'\xc2\xb7' # the line's separator, a middle dot
  tail_re=" $SEP model mlp $SEP dataset fashion-mnist 384/200 $SEP precision f32 $SEP threads 2\$"
  SMALLRUN=(--model mlp --epochs 1 --data-dir data --batch-size 32 --limit-train 384 --limit-test 200 --quiet)
  run explicit 0 "$CT" train --device cpu "${SMALLRUN[@]}" --checkpoint d.safetensors &&
    expect_text "--device cpu: the line says it was asked for" explicit.err "^device cpu \(--device cpu\)$tail_re"
  [ "$(grep -c '^device ' explicit.err)" -eq 1 ] && pass "one device line" ||
    fail "$(grep -c '^device ' explicit.err) device lines"
  run env_cpu 0 "$CT" train "${SMALLRUN[@]}" &&
    expect_text "CT_DEVICE=cpu: the line says so" env_cpu.err "^device cpu \(CT_DEVICE=cpu\)$tail_re"
  run bf16 0 "$CT" train --device cpu --amp bf16 "${SMALLRUN[@]}" &&
    expect_text "the precision under --amp" bf16.err "^device cpu .* $SEP precision amp bf16 "
  run eval 0 "$CT" eval --checkpoint d.safetensors --data-dir data --quiet &&
    expect_text "eval prints the line" eval.err "^device cpu \(CT_DEVICE=cpu\) $SEP model mlp $SEP dataset fashion-mnist 200 test $SEP precision f32 $SEP threads 2\$"
  # auto: the GPU when one can be used, else the CPU and why not.
  run auto 0 env -u CT_DEVICE "$CT" train "${SMALLRUN[@]}" &&
    expect_text "auto: a GPU, or the CPU with the reason" auto.err \
      "^device (cuda:[0-9]+ \(.+, [0-9.]+ GiB\)|cpu \(no GPU: .+\))$tail_re"
  run info 0 env -u CT_DEVICE "$CT" info
  why=$(sed -n 's/^  no usable GPU: //p' info.out)
  if [ -n "$why" ]; then
    expect_text "info: the default device is the CPU, with the reason" info.out '^default device: cpu \(no GPU: .+\)$'
    grep -qF -- "device cpu (no GPU: $why)" auto.err && pass "the line gives info's reason" ||
      fail "the line's reason differs from info's ($why)"
    # A device asked for is never replaced by the CPU.
    run cuda 1 "$CT" train --device cuda "${SMALLRUN[@]}" &&
      { grep -qF -- "$why" cuda.err && pass "--device cuda fails with the reason" ||
        fail "--device cuda: reason missing: $(cat cuda.err)"; }
    ! grep -q '^device ' cuda.err && pass "... before training" || fail "--device cuda trained"
    run envcuda 1 env CT_DEVICE=cuda "$CT" train "${SMALLRUN[@]}" &&
      { grep -qF -- "CT_DEVICE=cuda cannot be used" envcuda.err && grep -qF -- "$why" envcuda.err &&
        pass "CT_DEVICE=cuda fails with the reason" || fail "CT_DEVICE=cuda: $(cat envcuda.err)"; }
    run infocuda 1 env CT_DEVICE=cuda "$CT" info &&
      expect_text "info: CT_DEVICE=cuda cannot be used" infocuda.out '^default device: none: .*CT_DEVICE=cuda cannot be used'
    run envbad 2 env CT_DEVICE=cuda:x "$CT" train "${SMALLRUN[@]}" &&
      expect_text "a malformed CT_DEVICE is a usage error" envbad.err "CT_DEVICE=cuda:x cannot be used"
    # A damaged CUDA backend first on the search path: the CPU trains, and the line says why.
    mkdir -p junk && head -c 4096 /dev/urandom >junk/libctensor-cuda.so
    run junk 0 env -u CT_DEVICE CT_BACKEND_PATH="$PWD/junk" "$CT" train "${SMALLRUN[@]}" &&
      expect_text "a damaged backend: the CPU trains and the reason names it" junk.err \
        "^device cpu \(no GPU: the CUDA backend \(.*junk/libctensor-cuda.so\) is damaged or foreign: not an ELF"
  else
    run cuda 0 "$CT" train --device cuda "${SMALLRUN[@]}" &&
      expect_text "--device cuda trains on the GPU" cuda.err "^device cuda:[0-9]+ \(.+ GiB\)$tail_re"
  fi
  ;;

resume_epoch)
  # The CNN, two data-loading configurations: the result must not depend on workers.
  run straight 0 "$CT" train --model cnn --optimizer sgd --epochs 2 --checkpoint a.safetensors --workers 2 "${COMMON[@]}" &&
    pass "straight run"
  run first 0 "$CT" train --model cnn --optimizer sgd --epochs 1 --checkpoint b.safetensors --workers 0 \
    --metrics b.jsonl "${COMMON[@]}" && pass "first epoch"
  cp b.safetensors b1.safetensors
  echo '{"epoch": 2, "stale": "line of an epoch the checkpoint lacks"}' >>b.jsonl
  run second 0 "$CT" train --resume --epochs 2 --checkpoint b.safetensors --workers 1 \
    --metrics b.jsonl --data-dir data --quiet && pass "resumed to epoch 2"
  "$ST" compare a.safetensors b.safetensors >cmp.out 2>&1 && pass "resumed = straight, bit for bit ($(cat cmp.out))" ||
    { fail "resumed run differs from the straight run"; cat cmp.out; }
  [ "$(wc -l <b.jsonl)" -eq 2 ] && ! grep -q stale b.jsonl && pass "metrics appended on resume, stale line dropped" ||
    fail "metrics lines: $(wc -l <b.jsonl)"
  # Negative control: the comparison does see a difference (1 epoch vs 2).
  "$ST" compare a.safetensors b1.safetensors >cmp1.out 2>&1
  [ $? -eq 1 ] && pass "compare detects different weights" || fail "compare missed a difference"
  run again 0 "$CT" train --resume --epochs 2 --checkpoint b.safetensors --data-dir data
  expect_text "resume of a finished run says so" again.out 'nothing to do'
  run conflict 2 "$CT" train --resume --epochs 3 --model mlp --checkpoint b.safetensors --data-dir data &&
    expect_text "resume refuses a contradicting --model" conflict.err 'contradicts the checkpoint'
  ;;

amp)
  # f16 autocast with the gradient scaler, whose scale is part of the checkpoint:
  # SIGINT mid-epoch and --resume must still equal the straight run.
  run straight 0 "$CT" train --model mlp --amp f16 --epochs 2 --checkpoint a.safetensors "${COMMON[@]}" &&
    pass "straight f16 run"
  CTENSOR_TEST_INTERRUPT_AFTER_BATCHES=21 run interrupted 130 "$CT" train --model mlp --amp f16 --epochs 2 \
    --checkpoint b.safetensors "${COMMON[@]}" && pass "SIGINT exits 130"
  run conflict 2 "$CT" train --resume --amp bf16 --epochs 2 --checkpoint b.safetensors --data-dir data &&
    expect_text "resume refuses a contradicting --amp" conflict.err '--amp bf16 contradicts the checkpoint \(f16\)'
  run resumed 0 "$CT" train --resume --epochs 2 --checkpoint b.safetensors --data-dir data --quiet &&
    pass "resumed"
  "$ST" compare a.safetensors b.safetensors >cmp.out 2>&1 && pass "f16: SIGINT+resume = straight, bit for bit ($(cat cmp.out))" ||
    { fail "f16: SIGINT+resume differs from the straight run"; cat cmp.out; }
  # auto: f16 on a GPU, bf16 on a CPU whose bf16 products beat f32 (else f32,
  # saying why on the run line); it trains.
  case $CT_DEVICE in cuda*) want=f16 ;; *) want=bf16 ;; esac
  run auto 0 "$CT" train --model mlp --amp auto --epochs 1 --lr 0.005 --data-dir data --limit-train 512 \
    --limit-test 256 --batch-size 32
  if [ "$want" = bf16 ] && grep -q -- "--amp auto keeps f32: " auto.err; then
    pass "--amp auto keeps f32 on this CPU, saying why"
    grep -q ", amp " auto.out && fail "--amp auto kept f32 but the header names an amp dtype"
  else
    expect_text "--amp auto is $want here" auto.out ", amp $want,"
  fi
  if [ "$want" = bf16 ]; then
    CTENSOR_CPU_BF16_GEMM=0 run autof32 0 "$CT" train --model mlp --amp auto --epochs 1 --data-dir data \
      --limit-train 64 --limit-test 32 --batch-size 32 &&
      expect_text "--amp auto keeps f32 without bf16 products" autof32.err "precision f32 \(--amp auto keeps f32: .*AVX512-BF16"
    expect_text "an explicit --amp f16 on the CPU warns" straight.err "warning: --amp f16 on the CPU: "
  fi
  acc=$(sed -nE 's/^test accuracy: [0-9.]+% \(([0-9]+)\/256\)/\1/p' auto.out)
  awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 128) }' && pass "learned with --amp auto ($acc/256)" ||
    fail "accuracy ${acc:-?}/256 too low with --amp auto"
  run badamp 2 "$CT" train --amp f32 --data-dir data && expect_text "bad --amp value" badamp.err "--amp: expected none, auto, f16 or bf16, got 'f32'"
  ;;

dist)
  # Data parallel under mpiexec (MPIEXEC, default mpiexec): 2 ranks of 256 samples each.
  MPIEXEC=${MPIEXEC:-mpiexec}
  command -v "$MPIEXEC" >/dev/null || { echo "skipped: no $MPIEXEC"; exit 77; }
  "$CT" info | grep -q 'mpi=ON' || { echo "skipped: this ctensor was built without MPI"; exit 77; }
  MPI=("$MPIEXEC" -n 2)
  run straight 0 "${MPI[@]}" "$CT" train --model mlp --epochs 2 --checkpoint a.safetensors --metrics a.jsonl \
    --data-dir data --limit-train 512 --limit-test 256 --batch-size 32 && pass "2 processes train"
  expect_text "says it runs 2 processes" straight.out ', 2 processes \((mpi|nccl); batch 32 each\)'
  [ "$(grep -c '^test accuracy' straight.out)" -eq 1 ] && pass "one rank reports" ||
    fail "$(grep -c '^test accuracy' straight.out) final accuracy lines"
  [ "$(wc -l <a.jsonl)" -eq 2 ] && pass "one rank writes the metrics" || fail "metrics has $(wc -l <a.jsonl) lines"
  grep -q '"images_per_second"' a.jsonl && pass "metrics lines" || fail "metrics lines malformed"
  # 8 batches per rank per epoch: stop at batch 13 = epoch 2, batch 5 (all ranks agree).
  CTENSOR_TEST_INTERRUPT_AFTER_BATCHES=13 run interrupted 130 "${MPI[@]}" "$CT" train --model mlp --epochs 2 \
    --checkpoint b.safetensors --metrics b.jsonl "${COMMON[@]}" && pass "SIGINT stops both ranks"
  expect_text "says where it stopped" interrupted.err 'interrupted at epoch 2, batch 5/8'
  run wrongworld 2 "$CT" train --resume --epochs 2 --checkpoint b.safetensors --data-dir data &&
    expect_text "mid-epoch resume needs as many processes" wrongworld.err 'stopped mid-epoch with 2 process'
  run resumed 0 "${MPI[@]}" "$CT" train --resume --epochs 2 --checkpoint b.safetensors --metrics b.jsonl \
    --data-dir data --quiet && pass "resumed with 2 processes"
  "$ST" compare a.safetensors b.safetensors >cmp.out 2>&1 && pass "SIGINT+resume = straight, bit for bit ($(cat cmp.out))" ||
    { fail "SIGINT+resume differs from the straight run"; cat cmp.out; }
  l_a=$(tail -1 a.jsonl | sed -E 's/.*"loss": ([^,]+),.*/\1/')
  l_b=$(tail -1 b.jsonl | sed -E 's/.*"loss": ([^,]+),.*/\1/')
  [ "$l_a" = "$l_b" ] && pass "epoch 2 loss over both ranks identical ($l_a)" || fail "epoch 2 loss $l_a vs $l_b"
  acc=$(sed -nE 's/^test accuracy: [0-9.]+% \(([0-9]+)\/256\)/\1/p' straight.out)
  awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 128) }' && pass "learned ($acc/256)" || fail "accuracy ${acc:-?}/256"
  ;;

vision)
  # 3 batches of 24 per epoch; SIGINT after 4 = epoch 2, batch 1.
  VIS=(--data-dir data --limit-train 72 --limit-test 48 --batch-size 24 --epochs 2)
  for m in resnet vit; do
    run "$m" 0 "$CT" train --model $m --checkpoint $m-a.safetensors --metrics $m.jsonl "${VIS[@]}" &&
      pass "$m: trains"
    case $m in resnet) want='sgd lr 0.05 momentum 0.9 weight decay 0.0005' ;; vit) want='adamw lr 0.001 weight decay 0.05' ;; esac
    expect_text "$m: default optimizer" $m.out "on cpu: $want cosine"
    [ $m = resnet ] && expect_text "resnet: label smoothing 0.1 by default" $m.out "label smoothing 0.1,"
    CTENSOR_TEST_INTERRUPT_AFTER_BATCHES=4 run $m-int 130 "$CT" train --model $m --checkpoint $m-b.safetensors \
      "${VIS[@]}" --quiet && pass "$m: SIGINT exits 130"
    run $m-resumed 0 "$CT" train --resume --epochs 2 --checkpoint $m-b.safetensors --data-dir data --quiet &&
      pass "$m: resumed"
    "$ST" compare $m-a.safetensors $m-b.safetensors >$m-cmp.out 2>&1 &&
      pass "$m: SIGINT+resume = straight, bit for bit ($(cat $m-cmp.out))" ||
      { fail "$m: SIGINT+resume differs from the straight run"; cat $m-cmp.out; }
    acc=$(tail -1 $m.jsonl | sed -E 's/.*"test_correct": ([0-9]+).*/\1/')
    run $m-eval 0 "$CT" eval --checkpoint $m-a.safetensors --data-dir data &&
      expect_text "$m: eval = the last epoch's accuracy ($acc/48)" $m-eval.out "^test accuracy: [0-9.]+% \($acc/48\)"
  done
  for key in layer3.1.bn2.running_mean layer3.1.bn2.running_var layer3.1.bn2.num_batches_tracked \
    layer2.0.shortcut.0.weight layer2.0.shortcut.1.running_var fc.weight; do
    grep -aq "\"$key\"" resnet-a.safetensors || fail "resnet checkpoint lacks $key"
  done
  pass "resnet checkpoint holds torch's state_dict keys, BatchNorm buffers included"
  for key in pos_embed patch_embed.weight blocks.3.self_attn.in_proj_weight blocks.0.linear1.weight norm.weight head.bias; do
    grep -aq "\"$key\"" vit-a.safetensors || fail "vit checkpoint lacks $key"
  done
  pass "vit checkpoint holds torch's state_dict keys"
  ;;

resume_sigint)
  # Also Adam, whose state (moments, step count) must be restored exactly.
  run straight 0 "$CT" train --model cnn --optimizer adam --epochs 2 --checkpoint a.safetensors \
    --metrics a.jsonl "${COMMON[@]}" && pass "straight run"
  # 16 batches per epoch: stop at batch 21 = epoch 2, batch 5.
  CTENSOR_TEST_INTERRUPT_AFTER_BATCHES=21 run interrupted 130 "$CT" train --model cnn --optimizer adam \
    --epochs 2 --checkpoint b.safetensors --metrics b.jsonl "${COMMON[@]}" && pass "SIGINT exits 130"
  expect_text "says where it stopped" interrupted.err 'interrupted at epoch 2, batch 5/16'
  expect_text "says how to resume" interrupted.err 'resume with: ctensor train --resume --checkpoint b.safetensors'
  run evalmid 0 "$CT" eval --checkpoint b.safetensors --data-dir data &&
    expect_text "mid-epoch checkpoint evaluates" evalmid.out '1 epoch\(s\) and 5 batch'
  run resumed 0 "$CT" train --resume --epochs 2 --checkpoint b.safetensors --metrics b.jsonl \
    --data-dir data --quiet && pass "resumed"
  "$ST" compare a.safetensors b.safetensors >cmp.out 2>&1 && pass "SIGINT+resume = straight, bit for bit ($(cat cmp.out))" ||
    { fail "SIGINT+resume differs from the straight run"; cat cmp.out; }
  # The epoch's reported loss survives the interruption too.
  l_a=$(tail -1 a.jsonl | sed -E 's/.*"loss": ([^,]+),.*/\1/')
  l_b=$(tail -1 b.jsonl | sed -E 's/.*"loss": ([^,]+),.*/\1/')
  [ "$l_a" = "$l_b" ] && pass "epoch 2 loss identical ($l_a)" || fail "epoch 2 loss $l_a vs $l_b"
  # A real SIGINT from outside, in the middle of an epoch.
  "$CT" train --model mlp --epochs 50 --checkpoint c.safetensors "${COMMON[@]}" >sig.out 2>sig.err &
  pid=$!
  # After its first checkpoint (epoch 1), however long the machine takes to get there.
  while kill -0 $pid 2>/dev/null && [ ! -e c.safetensors ]; do sleep 0.1; done
  kill -INT $pid
  wait $pid
  rc=$?
  [ $rc -eq 130 ] && pass "external SIGINT exits 130" || fail "external SIGINT: exit $rc"
  expect_text "external SIGINT saves a checkpoint" sig.err 'checkpoint saved to c.safetensors'
  run evalsig 0 "$CT" eval --checkpoint c.safetensors --data-dir data && pass "that checkpoint evaluates"
  ;;

stale_save)
  # What a killed save leaves ("<path>.tmp.<pid>" of a dead process) the next
  # run removes, and nothing else. (tests/cli/kill_save.c kills saves at
  # random moments and checks the checkpoint itself.)
  run first 0 "$CT" train --model mlp --epochs 1 --checkpoint ck.safetensors "${COMMON[@]}" && pass "epoch 1"
  sh -c 'exit 0' &
  dead=$!
  wait $dead
  sleep 86400 & # alive until killed below, however long the runs between take
  live=$!
  for f in "ck.safetensors.tmp.$dead" "ck.safetensors.tmp.$live" ck.safetensors.tmp.abc ck.safetensors.other \
    other.safetensors.tmp.$dead; do echo partial >"$f"; done
  ln -s ck.safetensors "ck.safetensors.tmp.$((dead + 1000000))"
  run resumed 0 "$CT" train --resume --epochs 2 --checkpoint ck.safetensors --data-dir data &&
    expect_text "says what it removed" resumed.err \
      "removed 1 temporary file\(s\) that an interrupted save to ck.safetensors left"
  [ ! -e "ck.safetensors.tmp.$dead" ] && pass "a dead process's temporary is gone" ||
    fail "ck.safetensors.tmp.$dead survived the next run"
  left=0
  for f in "ck.safetensors.tmp.$live" ck.safetensors.tmp.abc ck.safetensors.other other.safetensors.tmp.$dead \
    "ck.safetensors.tmp.$((dead + 1000000))"; do [ -e "$f" ] || [ -L "$f" ] || left=1; done
  [ $left = 0 ] && pass "a live process's temporary, other names and a link are left alone" ||
    fail "removed more than the stale temporary: $(ls)"
  kill $live 2>/dev/null
  # A real run killed while it trains and saves: the next one cleans up.
  rm -f ck.safetensors.tmp.* && rm -f "ck.safetensors.tmp.$((dead + 1000000))"
  "$CT" train --model mlp --epochs 200 --checkpoint k.safetensors "${COMMON[@]}" >k.out 2>k.err &
  pid=$!
  while kill -0 $pid 2>/dev/null && [ ! -e k.safetensors ]; do sleep 0.05; done
  sleep 0.3 # some moment of a later epoch (which one does not matter)
  kill -9 $pid
  wait $pid 2>/dev/null
  echo partial >"k.safetensors.tmp.$pid" # as if the kill had landed in a save
  run evalk 0 "$CT" eval --checkpoint k.safetensors --data-dir data && pass "the killed run's checkpoint loads"
  done_epochs=$(sed -nE 's/.*, ([0-9]+) epoch\(s\).*/\1/p' evalk.out)
  run again 0 "$CT" train --resume --epochs $((${done_epochs:-0} + 1)) --checkpoint k.safetensors --data-dir data \
    --quiet && pass "training continues after the kill"
  [ -z "$(ls k.safetensors.tmp.* 2>/dev/null)" ] && pass "no temporary survives the next run" ||
    fail "left behind: $(ls k.safetensors.tmp.*)"
  ;;

errors)
  run noargs 2 "$CT" && expect_text "no command: usage" noargs.err '^usage: ctensor'
  run badcmd 2 "$CT" frobnicate && expect_text "unknown command: usage" badcmd.err '^usage: ctensor'
  run badopt 2 "$CT" train --frobnicate && expect_text "unknown option: named" badopt.err "unknown option '--frobnicate'" &&
    expect_text "unknown option: usage" badopt.err '^usage: ctensor'
  run epochs 2 "$CT" train --epochs -3 && expect_text "--epochs -3" epochs.err 'epochs: expected'
  run lr 2 "$CT" train --lr abc && expect_text "--lr abc" lr.err 'lr: expected'
  run lr0 2 "$CT" train --lr 0 && pass "--lr 0 refused"
  run lrnan 2 "$CT" train --lr nan && pass "--lr nan refused"
  run bs 2 "$CT" train --batch-size 99999999999999999999 && pass "huge --batch-size refused"
  run model 2 "$CT" train --model resnet50 && expect_text "--model resnet50" model.err 'model: expected'
  run sched 2 "$CT" train --lr-schedule linear && expect_text "--lr-schedule linear" sched.err 'lr-schedule: expected'
  run stepsize 2 "$CT" train --lr-step-size 2 && expect_text "--lr-step-size without step" stepsize.err 'apply to --lr-schedule step'
  run aug 2 "$CT" train --augment hflip,rotate && expect_text "--augment hflip,rotate" aug.err 'augment: expected'
  run missingval 2 "$CT" train --epochs && expect_text "option without value" missingval.err 'needs a value'
  run extra 2 "$CT" train stray && expect_text "stray argument" extra.err 'unexpected argument'
  run device 2 "$CT" train --device tpu:0 --data-dir data && pass "--device tpu:0 refused"
  run resumeonly 2 "$CT" train --resume && expect_text "--resume without --checkpoint" resumeonly.err 'needs --checkpoint'
  run evalnock 2 "$CT" eval && expect_text "eval without --checkpoint" evalnock.err 'required'
  run nodata 1 "$CT" train --data-dir "$WORK/nowhere" --epochs 1 &&
    expect_text "missing dataset names the Debian package" nodata.err 'install the Debian package dataset-fashion-mnist'
  run noresume 1 "$CT" train --resume --checkpoint nothere.safetensors --data-dir data &&
    expect_text "resume from a missing checkpoint" noresume.err 'no checkpoint at'
  # Corrupt checkpoints: garbage, truncated, not a checkpoint, wrong model.
  run good 0 "$CT" train --model mlp --epochs 1 --checkpoint good.safetensors "${COMMON[@]}"
  head -c 1000 /dev/urandom >garbage.safetensors
  run garbage 1 "$CT" eval --checkpoint garbage.safetensors --data-dir data &&
    expect_text "garbage checkpoint: clear message" garbage.err 'cannot read checkpoint'
  head -c $(($(stat -c %s good.safetensors) - 100)) good.safetensors >trunc.safetensors
  run trunc 1 "$CT" eval --checkpoint trunc.safetensors --data-dir data &&
    expect_text "truncated checkpoint: clear message" trunc.err 'cannot read checkpoint'
  run trunc_resume 1 "$CT" train --resume --checkpoint trunc.safetensors --data-dir data &&
    expect_text "resume from a truncated checkpoint" trunc_resume.err 'cannot resume'
  printf '\x08\x00\x00\x00\x00\x00\x00\x00{}      ' >empty.safetensors
  run notckpt 1 "$CT" eval --checkpoint empty.safetensors --data-dir data &&
    expect_text "a safetensors file that is no checkpoint" notckpt.err 'not a ctensor training checkpoint'
  "$ST" set-i64 good.safetensors wrong.safetensors meta.model 2 || fail "st_tool set-i64"
  run wrongmodel 1 "$CT" eval --checkpoint wrong.safetensors --data-dir data &&
    expect_text "wrong model in the checkpoint" wrongmodel.err 'does not fit model cnn'
  "$ST" set-i64 good.safetensors badcode.safetensors meta.model 77 || fail "st_tool set-i64"
  run badcode 1 "$CT" eval --checkpoint badcode.safetensors --data-dir data &&
    expect_text "unknown model code" badcode.err 'meta.model has a value out of range'
  run schedconflict 2 "$CT" train --resume --epochs 2 --lr-schedule step --checkpoint good.safetensors --data-dir data &&
    expect_text "resume refuses a contradicting --lr-schedule" schedconflict.err 'lr-schedule step contradicts'
  "$ST" set-i64 good.safetensors badsched.safetensors meta.lr_schedule 9 || fail "st_tool set-i64"
  run badsched 1 "$CT" eval --checkpoint badsched.safetensors --data-dir data &&
    expect_text "unknown schedule code" badsched.err 'meta.lr_schedule has a value out of range'
  "$ST" set-i64 good.safetensors bigstep.safetensors meta.step_count 9223372036854775807 ||
    fail "st_tool set-i64"
  run bigstep 1 "$CT" train --resume --epochs 2 --checkpoint bigstep.safetensors --data-dir data --quiet &&
    expect_text "a step count that cannot grow" bigstep.err \
      'meta.step_count 9223372036854775807 is out of range \[0, 9223372036854775807\)'
  "$ST" set-i64 good.safetensors badpos.safetensors meta.batch 1000 || fail "st_tool set-i64"
  run badpos 1 "$CT" train --resume --epochs 2 --checkpoint badpos.safetensors --data-dir data --quiet &&
    expect_text "position past the epoch" badpos.err 'past the epoch'
  ;;

data_errors)
  # st_file PATH HEADER: a safetensors file with that JSON header and no data.
  st_file() {
    local n
    n=$(printf '%s' "$2" | LC_ALL=C wc -c)
    { printf "$(printf '\\x%02x\\x%02x\\x00\\x00\\x00\\x00\\x00\\x00' $((n & 255)) $((n >> 8)))"
      printf '%s' "$2"; } >"$1"
  }
  # no_raw NAME FILE: FILE holds printable ASCII only (names escaped, not raw).
  no_raw() {
    [ "$(LC_ALL=C tr -d '\n\t -~' <"$2" | wc -c)" -eq 0 ] && pass "$1" ||
      fail "$1: raw bytes in $2: $(od -c "$2" | head -5)"
  }
  # Empty sets: a clear error, not "0/0" and exit 0.
  mkdir -p empty && cp data/train-* empty/ &&
    printf '\x00\x00\x08\x03\x00\x00\x00\x00\x00\x00\x00\x1c\x00\x00\x00\x1c' >empty/t10k-images-idx3-ubyte &&
    printf '\x00\x00\x08\x01\x00\x00\x00\x00' >empty/t10k-labels-idx1-ubyte
  run emptytest 1 "$CT" train --model mlp --epochs 1 --data-dir empty &&
    expect_text "an empty test set is refused" emptytest.err 'the test set of fashion-mnist in empty holds no samples'
  ! grep -q 'test accuracy' emptytest.out && pass "no 0/0 accuracy" || fail "printed an accuracy"
  mkdir -p empty2 && cp empty/t10k-* empty2/ && cp empty/t10k-images-idx3-ubyte empty2/train-images-idx3-ubyte &&
    cp empty/t10k-labels-idx1-ubyte empty2/train-labels-idx1-ubyte
  run emptytrain 1 "$CT" train --model mlp --epochs 1 --data-dir empty2 &&
    expect_text "an empty training set is refused" emptytrain.err 'the training set of fashion-mnist in empty2 holds no samples'
  run good 0 "$CT" train --model mlp --epochs 1 --checkpoint good.safetensors "${COMMON[@]}"
  run emptyeval 1 "$CT" eval --checkpoint good.safetensors --data-dir empty &&
    expect_text "eval refuses an empty test set" emptyeval.err 'ctensor eval: the test set .* holds no samples'
  run limit0 2 "$CT" train --limit-train 0 --data-dir data && expect_text "--limit-train 0" limit0.err 'limit-train: expected a positive'
  run limit0t 2 "$CT" train --limit-test 0 --data-dir data && expect_text "--limit-test 0" limit0t.err 'limit-test: expected a positive'
  run limit0e 2 "$CT" eval --checkpoint good.safetensors --limit-test 0 && pass "eval --limit-test 0 refused"
  # A label outside 0..9: refused at load, naming the file, the index and the value.
  mkdir -p badlabel && cp data/* badlabel/ &&
    printf '\x0c' | dd of=badlabel/train-labels-idx1-ubyte bs=1 seek=$((8 + 37)) conv=notrunc status=none
  run badlabel 1 "$CT" train --model mlp --epochs 1 --data-dir badlabel &&
    expect_text "a label out of range: file, index, value" badlabel.err \
      'badlabel/train-labels-idx1-ubyte: label 37 is 12 \(MNIST and Fashion-MNIST have classes 0..9\)'
  ! grep -q 'batch' badlabel.err && pass "found before training" || fail "found mid-epoch"
  # A gzip file cut in its trailer: refused, not read unverified.
  mkdir -p cutgz && cp data/* cutgz/ && gzip -c data/t10k-labels-idx1-ubyte | head -c -4 >cutgz/t10k-labels-idx1-ubyte.gz &&
    rm cutgz/t10k-labels-idx1-ubyte
  run cutgz 1 "$CT" train --model mlp --epochs 1 --data-dir cutgz &&
    expect_text "a gzip stream cut before its trailer" cutgz.err 't10k-labels-idx1-ubyte.gz: truncated: the gzip stream ends before its trailer'
  # Names that are not UTF-8 (or hold control characters) show escaped.
  run rawdir 1 "$CT" train --data-dir $'no\xffwhere\e[31m' && no_raw "a data folder's name is escaped" rawdir.err
  expect_text "... as \\xNN" rawdir.err 'no\\xffwhere\\x1b\[31m'
  run rawck 1 "$CT" eval --checkpoint $'missing\xfe.safetensors' && no_raw "a checkpoint's name is escaped" rawck.err
  run rawmodel 2 "$CT" train --model $'mlp\xff' && no_raw "an option's value is escaped" rawmodel.err
  # Checkpoints the safetensors writer could not have written: refused by the reader.
  st_file emptyname.safetensors '{"":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'
  run emptyname 1 "$CT" eval --checkpoint emptyname.safetensors --data-dir data &&
    expect_text "a tensor without a name" emptyname.err "tensor name '' is empty"
  st_file rawname.safetensors $'{"a\xff":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'
  run rawname 1 "$CT" eval --checkpoint rawname.safetensors --data-dir data &&
    expect_text "a name that is not UTF-8" rawname.err "not valid UTF-8"
  no_raw "... and no raw byte of it" rawname.err
  st_file strides.safetensors '{"a":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}}'
  run strides 1 "$CT" eval --checkpoint strides.safetensors --data-dir data &&
    expect_text "an empty tensor whose strides overflow" strides.err 'shape \(0, 4294967296, 4294967296\) is too large'
  # A tensor name from the file, with control characters, in the program's own message.
  "$ST" add good.safetensors extra.safetensors $'x\e[2Jy' || fail "st_tool add"
  run extra 1 "$CT" eval --checkpoint extra.safetensors --data-dir data &&
    expect_text "a tensor name from the file is escaped" extra.err 'the checkpoint holds x\\x1b\[2Jy, which model mlp'
  no_raw "... never raw" extra.err
  ;;

output_errors)
  # Metrics that cannot be written (a full disk): exit 1 with the reason.
  run fullmetrics 1 "$CT" train --model mlp --epochs 1 --metrics /dev/full "${COMMON[@]}" &&
    expect_text "metrics on a full disk" fullmetrics.err 'writing the metrics to /dev/full: No space left on device'
  [ "$(grep -c 'metrics' fullmetrics.err)" -eq 1 ] && pass "said once" || fail "said $(grep -c metrics fullmetrics.err) times"
  # ... and on --resume, a device is appended to as it is (never read back).
  run ck1 0 "$CT" train --model mlp --epochs 1 --checkpoint ck.safetensors "${COMMON[@]}"
  run fullresume 1 timeout 900 "$CT" train --resume --epochs 2 --checkpoint ck.safetensors --metrics /dev/full \
    --data-dir data --quiet && expect_text "resume with metrics on a full disk" fullresume.err 'No space left on device'
  # The results on stdout, to a full disk.
  "$CT" train --model mlp --epochs 1 "${COMMON[@]}" >/dev/full 2>fullout.err
  rc=$?
  [ $rc -eq 1 ] && pass "results to a full disk: exit 1" || fail "results to a full disk: exit $rc"
  expect_text "... with the reason" fullout.err 'writing the output: No space left on device'
  run fullinfo 1 sh -c "\"$CT\" info >/dev/full" && pass "info to a full disk: exit 1"
  # A --checkpoint that cannot be written: refused before the first epoch.
  mkdir -p ckdir
  run ckdir 1 "$CT" train --model mlp --epochs 1 --checkpoint ckdir --data-dir data &&
    expect_text "a folder as --checkpoint" ckdir.err '--checkpoint ckdir is a folder: name a file'
  ! grep -q 'epoch 1/1' ckdir.out ckdir.err && pass "... said before training" || fail "trained first"
  echo x >afile
  run cknodir 1 "$CT" train --model mlp --epochs 1 --checkpoint afile/ck.safetensors --data-dir data &&
    expect_text "a --checkpoint in no folder" cknodir.err 'cannot save checkpoints to afile/ck.safetensors: Not a directory'
  ! grep -q 'epoch 1/1' cknodir.out cknodir.err && pass "... said before training" || fail "trained first"
  run cknowhere 1 "$CT" train --checkpoint /nonexistent-dir/ck.safetensors --data-dir data &&
    expect_text "a --checkpoint in a missing folder" cknowhere.err 'No such file or directory'
  ! grep -q 'warning' cknowhere.err && pass "... one message" || fail "more than one message"
  ;;

*)
  echo "unknown case $CASE"
  exit 2
  ;;
esac

if [ $FAILS -ne 0 ]; then
  echo "$FAILS check(s) failed"
  exit 1
fi
echo "all checks passed"
