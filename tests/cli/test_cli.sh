#!/usr/bin/env bash
# End-to-end tests of the `ctensor` program on a small synthetic dataset in
# the real IDX format (512 train / 256 test 28x28 images).
#
#   test_cli.sh CASE CTENSOR MAKE_IDX ST_TOOL WORKDIR
#
# Cases: e2e (train 2 epochs, metrics, eval = last metrics line), resume_epoch
# (2 epochs straight = 1 epoch + --resume to 2, bit for bit), resume_sigint
# (SIGINT mid-epoch, --resume, bit for bit), kill9_save (kill -9 while a
# checkpoint is being replaced leaves the old one intact), amp (--amp: f16 with
# loss scaling, SIGINT and --resume bit for bit), dist (2 processes under
# mpiexec: rank 0 alone reports and saves, SIGINT and --resume bit for bit;
# skipped, exit 77, without MPI), errors (exit codes and messages of bad
# input). CT_TEST_DEVICE (default cpu) is the device the
# program trains on (the e2e case runs on the emulated GPU too).
set -u
CASE=$1 CT=$2 MAKE_IDX=$3 ST=$4 WORK=$5
rm -rf "$WORK" && mkdir -p "$WORK/data" || exit 1
cd "$WORK" || exit 1
"$MAKE_IDX" data 512 256 || { echo "FAIL: cannot make the dataset"; exit 1; }
export OMP_NUM_THREADS=2 CT_DEVICE=${CT_TEST_DEVICE:-cpu}

FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
# run NAME EXPECTED_RC CMD...: runs CMD with output in NAME.out/NAME.err.
run() {
  local name=$1 want=$2
  shift 2
  "$@" >"$name.out" 2>"$name.err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, expected $want"
    sed 's/^/  | /' "$name.out" "$name.err" | tail -20
    return 1
  fi
  return 0
}
# expect_text NAME FILE PATTERN: FILE contains PATTERN (grep -E).
expect_text() {
  if grep -Eq -- "$3" "$2"; then pass "$1"; else
    fail "$1: '$3' not in $2"
    sed 's/^/  | /' "$2" | tail -10
  fi
}

COMMON=(--data-dir data --limit-train 512 --limit-test 256 --batch-size 32 --quiet)

case $CASE in
e2e)
  run train 0 "$CT" train --model mlp --epochs 2 --checkpoint ck.safetensors --metrics m.jsonl \
    --data-dir data --batch-size 32 --lr 0.05 --limit-train 384 --limit-test 200 && pass "train exits 0"
  expect_text "train prints the final accuracy" train.out '^test accuracy: [0-9.]+% \([0-9]+/200\)'
  expect_text "train prints per-epoch lines" train.out '^epoch 2/2: loss'
  expect_text "non-tty progress lines" train.err 'epoch 1/2: batch 12/12 \(100%\)'
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
  # auto: f16 on a GPU, bf16 on the CPU; it trains.
  case $CT_DEVICE in cuda*) want=f16 ;; *) want=bf16 ;; esac
  run auto 0 "$CT" train --model mlp --amp auto --epochs 1 --lr 0.005 --data-dir data --limit-train 512 \
    --limit-test 256 --batch-size 32 && expect_text "--amp auto is $want here" auto.out ", amp $want,"
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
  for _ in $(seq 100); do [ -e c.safetensors ] && break; sleep 0.1; done
  kill -INT $pid
  wait $pid
  rc=$?
  [ $rc -eq 130 ] && pass "external SIGINT exits 130" || fail "external SIGINT: exit $rc"
  expect_text "external SIGINT saves a checkpoint" sig.err 'checkpoint saved to c.safetensors'
  run evalsig 0 "$CT" eval --checkpoint c.safetensors --data-dir data && pass "that checkpoint evaluates"
  ;;

kill9_save)
  run first 0 "$CT" train --model mlp --epochs 1 --checkpoint ck.safetensors "${COMMON[@]}" && pass "epoch 1"
  cp ck.safetensors ck.orig
  CTENSOR_TEST_SLOW_SAVE=30 "$CT" train --resume --epochs 2 --checkpoint ck.safetensors --data-dir data \
    --quiet >slow.out 2>slow.err &
  pid=$!
  # The new checkpoint is complete in ck.safetensors.saving; kill before the rename.
  for _ in $(seq 300); do grep -q 'pausing' slow.err 2>/dev/null && break; sleep 0.1; done
  grep -q 'pausing' slow.err && [ -e ck.safetensors.saving ] && pass "reached the save window" ||
    fail "never reached the save window"
  kill -9 $pid
  wait $pid 2>/dev/null
  cmp -s ck.safetensors ck.orig && pass "kill -9 during the save left the old checkpoint intact" ||
    fail "the checkpoint changed"
  run eval 0 "$CT" eval --checkpoint ck.safetensors --data-dir data &&
    expect_text "old checkpoint still loads (epoch 1)" eval.out '1 epoch\(s\)'
  # The next save replaces the leftover file and succeeds.
  run again 0 "$CT" train --resume --epochs 2 --checkpoint ck.safetensors --data-dir data --quiet &&
    pass "training continues after the kill"
  [ ! -e ck.safetensors.saving ] && pass "no leftover temporary" || fail "ck.safetensors.saving left behind"
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
  run model 2 "$CT" train --model resnet && expect_text "--model resnet" model.err 'model: expected'
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
  "$ST" set-i64 good.safetensors badpos.safetensors meta.batch 1000 || fail "st_tool set-i64"
  run badpos 1 "$CT" train --resume --epochs 2 --checkpoint badpos.safetensors --data-dir data --quiet &&
    expect_text "position past the epoch" badpos.err 'past the epoch'
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
