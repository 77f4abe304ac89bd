#!/usr/bin/env bash
# End-to-end tests of `ctensor train --model gpt` and `ctensor generate` on a
# small synthetic text corpus (18 KB of fortune-like lines, '%'-separated).
#
#   test_gpt.sh CASE CTENSOR ST_TOOL WORKDIR
#
# Cases: gpt_train (train, checkpoint, eval; 1 epoch + --resume and SIGINT
# mid-epoch + --resume equal the straight run bit for bit), gpt_generate
# (the same seed gives the same bytes, top-k 1 is greedy, errors for a
# missing file, another model's checkpoint, bad options), gpt_data (the
# unigram baseline on a corpus of known distribution; which files form the
# corpus; missing, empty or too small corpora; models and datasets that do
# not go together), gpt_device (a step and sampling on CT_TEST_DEVICE: the
# emulated GPU in CI). Each trains a handful of steps.
set -u
CASE=$1 CT=$2 ST=$3 WORK=$4
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" # before the cd: the path may be relative
rm -rf "$WORK" && mkdir -p "$WORK/data" || exit 1
cd "$WORK" || exit 1
export CT_NUM_THREADS=2 CT_DEVICE=cpu

# 400 lines of 45-47 bytes: 142 training windows of 128 bytes, 14 validation ones.
for i in $(seq 0 399); do printf 'fortune number %d: the cat sat on the mat.\n%%\n' "$i"; done >data/tiny
# 16 windows in 2 batches of 8 per epoch; 8 validation windows.
SMALL=(--model gpt --data-dir data --limit-train 16 --limit-test 8 --batch-size 8 --quiet)

case $CASE in
gpt_train)
  run straight 0 "$CT" train --model gpt --data-dir data --limit-train 16 --limit-test 8 --batch-size 8 \
    --epochs 2 --checkpoint a.safetensors --metrics a.jsonl && pass "gpt trains 2 epochs"
  expect_text "the header names the text and its baseline" straight.out \
    '^training gpt on fortunes \(16 train / 8 test samples\) on cpu: adamw lr 0.001'
  expect_text "prints the unigram baseline" straight.out \
    '^unigram baseline \(entropy of the training bytes\): [0-9.]+ nats/byte \([0-9.]+ bits/byte\)'
  expect_text "per-epoch losses in nats and bits per byte" straight.out \
    '^epoch 2/2: loss [0-9.]+ nats/byte \([0-9.]+ bits/byte\), validation loss [0-9.]+'
  expect_text "the final validation loss" straight.out '^validation loss: [0-9.]+ nats/byte'
  [ "$(wc -l <a.jsonl)" -eq 2 ] && pass "2 metrics lines" || fail "metrics has $(wc -l <a.jsonl) lines"
  # The first steps start near log(256) = 5.55 and go down.
  l1=$(head -1 a.jsonl | sed -E 's/.*"loss": ([^,]+),.*/\1/')
  l2=$(tail -1 a.jsonl | sed -E 's/.*"loss": ([^,]+),.*/\1/')
  awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(a < 5.8 && b < a) }' && pass "loss falls ($l1 -> $l2)" ||
    fail "loss $l1 -> $l2"
  test_loss=$(tail -1 a.jsonl | sed -E 's/.*"test_loss": ([^,]+),.*/\1/')
  run eval 0 "$CT" eval --checkpoint a.safetensors --data-dir data && pass "eval reads a gpt checkpoint"
  expect_text "eval names the model and the data" eval.out 'model gpt, dataset fortunes, 2 epoch'
  # The same windows and weights: the same mean loss per byte as the last epoch's line.
  ev=$(sed -nE 's/^test loss: ([0-9.]+)/\1/p' eval.out)
  awk -v a="$ev" -v b="$test_loss" 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }' &&
    pass "eval loss = the epoch's validation loss ($ev)" || fail "eval loss $ev vs $test_loss"
  # 1 epoch, then --resume to 2: the same weights, bit for bit.
  run first 0 "$CT" train "${SMALL[@]}" --epochs 1 --checkpoint b.safetensors && pass "first epoch"
  run second 0 "$CT" train --resume --epochs 2 --checkpoint b.safetensors --data-dir data --quiet &&
    pass "resumed to epoch 2"
  "$ST" compare a.safetensors b.safetensors >cmp.out 2>&1 && pass "epoch resume = straight ($(cat cmp.out))" ||
    { fail "resumed run differs from the straight run"; cat cmp.out; }
  # SIGINT mid-epoch 2 (after 3 of 4 batches), then --resume.
  CTENSOR_TEST_INTERRUPT_AFTER_BATCHES=3 run interrupted 130 "$CT" train "${SMALL[@]}" --epochs 2 \
    --checkpoint c.safetensors && pass "SIGINT exits 130"
  expect_text "says where it stopped" interrupted.err 'interrupted at epoch 2, batch 1/2'
  run resumed 0 "$CT" train --resume --epochs 2 --checkpoint c.safetensors --data-dir data --quiet &&
    pass "resumed mid-epoch"
  "$ST" compare a.safetensors c.safetensors >cmp2.out 2>&1 &&
    pass "SIGINT+resume = straight ($(cat cmp2.out))" || { fail "SIGINT+resume differs"; cat cmp2.out; }
  run conflict 2 "$CT" train --resume --epochs 3 --model mlp --checkpoint c.safetensors --data-dir data &&
    expect_text "resume refuses another --model" conflict.err '--model mlp contradicts the checkpoint \(gpt\)'
  ;;

gpt_generate)
  run train 0 "$CT" train "${SMALL[@]}" --epochs 1 --checkpoint g.safetensors && pass "trained"
  run a 0 "$CT" generate --checkpoint g.safetensors --prompt 'fortune ' --tokens 40 --seed 7
  run b 0 "$CT" generate --checkpoint g.safetensors --prompt 'fortune ' --tokens 40 --seed 7
  run c 0 "$CT" generate --checkpoint g.safetensors --prompt 'fortune ' --tokens 40 --seed 8
  expect_text "generate says what it runs on (stderr)" a.err \
    $'^device [a-z0-9:]+ \\(.+\\) \xc2\xb7 model gpt \xc2\xb7 40 bytes from g.safetensors \xc2\xb7 precision f32 \xc2\xb7 threads [0-9]+$'
  cmp -s a.out b.out && pass "the same seed gives the same bytes" || fail "seed 7 twice differs"
  ! cmp -s a.out c.out && pass "another seed gives other bytes" || fail "seeds 7 and 8 agree"
  # The prompt, 40 bytes, a newline.
  [ "$(head -c 8 a.out)" = "fortune " ] && pass "the prompt comes first" || fail "prompt missing"
  [ "$(LC_ALL=C wc -c <a.out)" -eq 49 ] && pass "prints --tokens bytes" ||
    fail "$(LC_ALL=C wc -c <a.out) bytes printed, expected 49"
  # top-k 1 takes the likeliest byte: the seed no longer matters.
  run g1 0 "$CT" generate --checkpoint g.safetensors --tokens 20 --top-k 1 --seed 1
  run g2 0 "$CT" generate --checkpoint g.safetensors --tokens 20 --top-k 1 --seed 2
  cmp -s g1.out g2.out && pass "top-k 1 is greedy" || fail "top-k 1 depends on the seed"
  # A low temperature with top-k 3: a different, still deterministic sample.
  run t1 0 "$CT" generate --checkpoint g.safetensors --tokens 20 --top-k 3 --temperature 0.5
  run t2 0 "$CT" generate --checkpoint g.safetensors --tokens 20 --top-k 3 --temperature 0.5
  cmp -s t1.out t2.out && pass "temperature and top-k: deterministic" || fail "t1 and t2 differ"
  # nan weights: no distribution to sample from, a clear failure (not NUL bytes and exit 0)
  "$ST" set-f64 g.safetensors nan.safetensors wte.weight nan || fail "st_tool set-f64"
  run nanw 1 "$CT" generate --checkpoint nan.safetensors --tokens 5 &&
    expect_text "nan weights: the distribution is not finite" nanw.err \
      'the sampled distribution is not finite at byte 1 \(logit 0 is nan\)'
  [ "$(LC_ALL=C tr -d -c '\000' <nanw.out | wc -c)" -eq 0 ] && pass "nan weights print no NUL bytes" ||
    fail "nan weights printed NUL bytes"
  run missing 1 "$CT" generate --checkpoint nothere.safetensors &&
    expect_text "a missing checkpoint" missing.err 'ctensor generate: no checkpoint at nothere.safetensors'
  "$ST" set-i64 g.safetensors mlp.safetensors meta.model 1 || fail "st_tool set-i64"
  run other 1 "$CT" generate --checkpoint mlp.safetensors &&
    expect_text "another model's checkpoint" other.err 'holds model mlp, which does not generate text'
  printf 'not a checkpoint' >junk.safetensors
  run junk 1 "$CT" generate --checkpoint junk.safetensors &&
    expect_text "a file that is no checkpoint" junk.err 'cannot read checkpoint junk.safetensors'
  run nockpt 2 "$CT" generate --tokens 5 && expect_text "--checkpoint is required" nockpt.err 'checkpoint PATH is required'
  run badtemp 2 "$CT" generate --checkpoint g.safetensors --temperature 0 &&
    expect_text "--temperature 0" badtemp.err 'temperature: expected a positive number'
  run badk 2 "$CT" generate --checkpoint g.safetensors --top-k 257 && pass "--top-k 257 refused"
  run help 0 "$CT" --help && expect_text "--help lists generate" help.out '^  generate --checkpoint P'
  ;;

gpt_data)
  # 'aaab' x 500: the first 90% (1800 bytes) hold 1350 a and 450 b:
  # H = -(3/4 ln 3/4 + 1/4 ln 1/4) = 0.5623 nats = 0.8113 bits.
  mkdir -p known && for i in $(seq 500); do printf aaab; done >known/aaab
  # Not part of the corpus: fortune's index files and .u8 links, hidden files, folders.
  printf 'zzzzzzzzzzzz' >known/aaab.dat && ln -s aaab known/aaab.u8 && printf 'zz' >known/.hidden &&
    mkdir known/sub
  run known 0 "$CT" train --model gpt --data-dir known --epochs 1 --limit-train 1 --limit-test 1 --batch-size 1
  expect_text "unigram baseline of a known corpus" known.out \
    '^unigram baseline \(entropy of the training bytes\): 0\.5623 nats/byte \(0\.8113 bits/byte\)'
  expect_text "windows of the training and validation bytes" known.out '\(1 train / 1 test samples\)'
  # Without --limit: (1800 - 1) / 128 = 14 training windows, (200 - 1) / 128 = 1 validation window.
  run windows 0 "$CT" train --model gpt --data-dir known --epochs 1 --batch-size 14 --lr-schedule none
  expect_text "14 training and 1 validation windows" windows.out '\(14 train / 1 test samples\)'
  run nodir 1 "$CT" train --model gpt --data-dir nothere --epochs 1 &&
    expect_text "a missing corpus folder" nodir.err \
      'fortunes: cannot open the folder nothere: .*install the Debian package fortunes'
  mkdir -p empty && printf 'x' >empty/only.dat && : >empty/blank
  run empty 1 "$CT" train --model gpt --data-dir empty --epochs 1 &&
    expect_text "an empty corpus" empty.err 'fortunes: no text in empty \(1 file\(s\)'
  mkdir -p small && printf 'tiny corpus\n%%\n' >small/one
  run small 1 "$CT" train --model gpt --data-dir small --epochs 1 &&
    expect_text "too little text for one window" small.err 'the training set of fortunes in small holds no samples'
  run gptimg 2 "$CT" train --model gpt --dataset mnist --epochs 1 &&
    expect_text "gpt on images" gptimg.err '--model gpt cannot train on mnist: it reads text'
  run mlptext 2 "$CT" train --model mlp --dataset fortunes --data-dir data --epochs 1 &&
    expect_text "an image model on text" mlptext.err '--model mlp cannot train on fortunes: it classifies images'
  run aug 2 "$CT" train "${SMALL[@]}" --augment hflip --epochs 1 &&
    expect_text "--augment on text" aug.err '--augment hflip applies to images'
  run badthreads 2 "$CT" train "${SMALL[@]}" --threads 0 && pass "--threads 0 refused"
  ;;

gpt_device)
  # One step on CT_TEST_DEVICE (the emulated GPU in CI), then the same bytes
  # generated there and on the CPU from its checkpoint.
  dev=${CT_TEST_DEVICE:-cpu}
  run train 0 "$CT" train --model gpt --data-dir data --limit-train 4 --limit-test 4 --batch-size 4 \
    --epochs 1 --device "$dev" --checkpoint g.safetensors && pass "one step on $dev"
  expect_text "trained on $dev" train.out " on $dev: adamw"
  run gen_dev 0 "$CT" generate --checkpoint g.safetensors --device "$dev" --tokens 16 --seed 3
  run gen_cpu 0 "$CT" generate --checkpoint g.safetensors --device cpu --tokens 16 --seed 3
  cmp -s gen_dev.out gen_cpu.out && pass "generate on $dev = on the cpu" || fail "$dev and cpu samples differ"
  ;;

*)
  echo "unknown case $CASE"
  exit 2
  ;;
esac

[ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "all passed"
