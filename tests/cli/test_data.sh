#!/usr/bin/env bash
# End-to-end tests of the `ctensor` program on your own data, on fixtures
# that make_user_data.c writes at test time (a 3-class CSV, a folder of PNG
# and JPEG images of two classes).
#
#   test_data.sh CASE CTENSOR MAKE_USER_DATA WORKDIR
#
# Cases: csv (train on csv:FILE with --target: a separable task learned in 3
# epochs, the summary line, eval = the last epoch, predict on rows of another
# column order, --regression (values fitted, eval, predict), --test-data,
# --limit-*, bad files and options), folder (train a cnn on
# folder:DIR with DIR/train and DIR/test, eval, predict on PNG and JPEG files,
# a --val-split of a folder without test data, an empty folder, a corrupt
# image named), messages (a missing built-in dataset says where its files come
# from; the CIFAR-10 default folder is the one --help names; predict's usage
# errors). CT_TEST_DEVICE (default cpu) is the device the program runs on.
set -u
CASE=$1 CT=$2 MAKE=$3 WORK=$4
source "$(dirname "${BASH_SOURCE[0]}")/common.sh" # before the cd: the path may be relative
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1
export OMP_NUM_THREADS=2 CT_DEVICE=${CT_TEST_DEVICE:-cpu}

# count NAME FILE TOTAL: the correct count of FILE's "test accuracy: X% (C/TOTAL)" line.
count() { sed -nE "s/^test accuracy: [0-9.]+% \(([0-9]+)\/$3\)\$/\1/p" "$2" | tail -1; }

case $CASE in
csv)
  "$MAKE" csv train.csv 300 && "$MAKE" csv other.csv 99 || { echo "FAIL: cannot make the CSV"; exit 1; }
  run train 0 "$CT" train --dataset csv:train.csv --target species --epochs 3 --batch-size 16 \
    --checkpoint ck.safetensors && pass "train on csv:FILE exits 0"
  expect_text "csv trains the mlp by default" train.err 'model mlp .* dataset csv 240/60 '
  acc=$(count train train.out 60)
  awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 57) }' && pass "learned the 3 classes ($acc/60)" ||
    fail "accuracy ${acc:-none}/60 too low"
  expect_text "the summary line" train.out \
    '^done: 3 epoch\(s\) in [0-9.]+ s; final test accuracy [0-9.]+%, best [0-9.]+% \(epoch [1-3]\); checkpoint ck\.safetensors$'
  run eval 0 "$CT" eval --checkpoint ck.safetensors && pass "eval exits 0"
  expect_text "eval = the last epoch ($acc/60: the same seeded split)" eval.out "^test accuracy: [0-9.]+% \($acc/60\)"
  expect_text "eval names the data" eval.out 'model mlp, dataset csv, 3 epoch'
  # --resume finds the data the checkpoint names
  cp ck.safetensors rs.safetensors
  run resume 0 "$CT" train --resume --checkpoint rs.safetensors --epochs 4 &&
    expect_text "--resume reopens csv:FILE" resume.out '^resuming from rs\.safetensors at epoch 4'
  # predict: feature columns found by name in another order, no target column
  printf 'sepal,petal\n0.1,3.1\n2.9,0.2\n-0.2,0.1\n' >new.csv
  run predict 0 "$CT" predict --checkpoint ck.safetensors new.csv && pass "predict exits 0"
  expect_text "row 1: versicolor" predict.out '^new\.csv row 1: versicolor \(class 1, p=0\.[0-9]+\)$'
  expect_text "row 2: virginica" predict.out '^new\.csv row 2: virginica \(class 2, p=0\.[0-9]+\)$'
  expect_text "row 3: setosa" predict.out '^new\.csv row 3: setosa \(class 0, p=[01]\.[0-9]+\)$'
  [ "$(wc -l <predict.out)" -eq 3 ] && pass "one line per row" || fail "$(wc -l <predict.out) lines"
  printf 'petal\n1\n' >narrow.csv
  run predict_narrow 1 "$CT" predict --checkpoint ck.safetensors narrow.csv new.csv &&
    expect_text "a CSV without a feature column is named" predict_narrow.err "no feature column 'sepal'"
  expect_text "... and the next input still gets its lines" predict_narrow.out '^new\.csv row 3: setosa'
  # test data of its own, and eval on other labeled rows
  run own 0 "$CT" train --dataset csv:train.csv --target species --test-data other.csv --epochs 2 \
    --checkpoint own.safetensors --quiet && expect_text "--test-data: all 99 rows test" own.out '\([0-9]+/99\)$'
  run eval_other 0 "$CT" eval --checkpoint ck.safetensors --test-data other.csv &&
    expect_text "eval --test-data" eval_other.out '^test accuracy: [0-9.]+% \([0-9]+/99\)'
  # --regression: a number to fit; eval and predict give values
  "$MAKE" regression reg.csv 400 || fail "cannot make the regression CSV"
  run reg 0 "$CT" train --dataset csv:reg.csv --target price --regression --epochs 20 --batch-size 16 \
    --lr 0.01 --checkpoint reg.safetensors && pass "train --regression exits 0"
  rmse=$(sed -nE 's/^test rmse: ([0-9.]+) \(80 samples\)$/\1/p' reg.out)
  awk -v r="${rmse:-9}" 'BEGIN { exit !(r < 0.2) }' && pass "fits price = 3a - 2b + 1 (test rmse $rmse)" ||
    fail "test rmse ${rmse:-none} too high"
  expect_text "the regression summary" reg.out '^done: 20 epoch\(s\) in [0-9.]+ s; final test rmse [0-9.]+, best [0-9.]+ \(epoch [0-9]+\); checkpoint reg\.safetensors$'
  run reg_eval 0 "$CT" eval --checkpoint reg.safetensors &&
    expect_text "eval = the last epoch's rmse" reg_eval.out "^test rmse: $rmse[0-9]* \(80 samples\)"
  printf 'b,a\n0,1\n1,0\n' >regnew.csv
  run reg_predict 0 "$CT" predict --checkpoint reg.safetensors regnew.csv &&
    awk '/^regnew\.csv row 1: price / { a = $5 } /^regnew\.csv row 2: price / { b = $5 }
         END { exit !(a > 3.7 && a < 4.3 && b > -1.3 && b < -0.7) }' reg_predict.out &&
    pass "predict: values near 4 and -1 ($(tr '\n' ' ' <reg_predict.out))" || fail "predicted $(cat reg_predict.out)"
  run limits 0 "$CT" train --dataset csv:train.csv --limit-train 30 --limit-test 10 --epochs 1 --quiet &&
    expect_text "--limit-train 30 --limit-test 10" limits.err 'dataset csv 30/10 '
  # bad input: exit 1 with the file, line, column and value; bad usage: exit 2
  run no_col 1 "$CT" train --dataset csv:train.csv --target colour --epochs 1 &&
    expect_text "an unknown --target" no_col.err "train.csv has no target column 'colour' \(columns: petal, sepal, species\)"
  printf 'a,b,y\n1,2,x\n3,oops,y\n' >bad.csv
  run bad_cell 1 "$CT" train --dataset csv:bad.csv --epochs 1 &&
    expect_text "a non-numeric cell" bad_cell.err "bad\.csv line 3, column 2 \('b'\): 'oops' is not a number"
  printf 'a,b,y\n1,2,x\n3,y\n' >ragged.csv
  run ragged 1 "$CT" train --dataset csv:ragged.csv --epochs 1 &&
    expect_text "a ragged row" ragged.err "ragged\.csv line 3 has 2 cells, the header has 3"
  run missing 1 "$CT" train --dataset csv:nothere.csv --epochs 1 &&
    expect_text "a missing file" missing.err "cannot open nothere\.csv"
  run cnn_csv 2 "$CT" train --dataset csv:train.csv --model cnn --epochs 1 &&
    expect_text "csv rows train the mlp only" cnn_csv.err "cannot train on CSV rows"
  run split_bad 2 "$CT" train --dataset csv:train.csv --val-split 1.5 &&
    expect_text "--val-split out of range" split_bad.err "val-split: expected a fraction"
  run target_builtin 2 "$CT" train --target species &&
    expect_text "--target needs csv" target_builtin.err "target and --regression apply to --dataset csv:FILE only"
  ;;

folder)
  "$MAKE" folder img 24 || { echo "FAIL: cannot make the image folder"; exit 1; }
  run train 0 "$CT" train --dataset folder:img --model cnn --image-size 16 --epochs 2 --batch-size 8 \
    --checkpoint ick.safetensors && pass "train on folder:DIR exits 0"
  expect_text "DIR/train and DIR/test are used" train.err 'model cnn .* dataset folder 48/24 '
  acc=$(count train train.out 24)
  awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 20) }' && pass "learned up from down ($acc/24)" ||
    fail "accuracy ${acc:-none}/24 too low"
  expect_text "the summary line" train.out '^done: 2 epoch\(s\) in [0-9.]+ s; final test accuracy .*; checkpoint ick\.safetensors$'
  run eval 0 "$CT" eval --checkpoint ick.safetensors && pass "eval exits 0"
  expect_text "eval = the last epoch ($acc/24)" eval.out "^test accuracy: [0-9.]+% \($acc/24\)"
  run predict 0 "$CT" predict --checkpoint ick.safetensors img/test/up/000.png img/test/down/002.jpg &&
    pass "predict exits 0"
  expect_text "a PNG's class" predict.out '^img/test/up/000\.png: up \(class 1, p=[01]\.[0-9]+\)$'
  expect_text "a JPEG's class" predict.out '^img/test/down/002\.jpg: down \(class 0, p=[01]\.[0-9]+\)$'
  # a folder without test data of its own: a seeded split
  cp -r img/train flat
  run split 0 "$CT" train --dataset folder:flat --model mlp --image-size 12 --val-split 0.25 --epochs 1 --quiet &&
    expect_text "--val-split 0.25 of 48 images" split.out '\([0-9]+/12\)$'
  mkdir -p empty
  run empty 1 "$CT" train --dataset folder:empty --epochs 1 &&
    expect_text "an empty folder" empty.err "empty has no class subfolders"
  cp -r img/test broken && printf 'not a png' >broken/up/000.png
  run broken 1 "$CT" train --dataset folder:img --model cnn --image-size 16 --epochs 1 --test-data broken --quiet &&
    expect_text "a corrupt image is named" broken.err "broken/up/000\.png is neither a PNG nor a JPEG"
  run gpt_folder 2 "$CT" train --dataset folder:img --model gpt --epochs 1 &&
    expect_text "the gpt does not read images" gpt_folder.err "cannot train on an image folder"
  ;;

messages)
  run cifar 1 "$CT" train --dataset cifar10 --data-dir nowhere --epochs 1 &&
    expect_text "cifar10: the files and where to get them" cifar.err \
      'cifar10 is read from nowhere \(data_batch_1\.bin \.\. data_batch_5\.bin, test_batch\.bin\): download .*https://www\.cs\.toronto\.edu/~kriz/cifar\.html'
  run fmnist 1 "$CT" train --dataset fashion-mnist --data-dir nowhere --epochs 1 &&
    expect_text "fashion-mnist: the Debian package" fmnist.err 'install the Debian package dataset-fashion-mnist'
  run help 0 "$CT" --help && expect_text "--help names the default folder" help.out '/usr/share/datasets/<dataset>'
  if [ ! -e /usr/share/datasets/cifar10/data_batch_1.bin ]; then
    run cifar_default 1 "$CT" train --dataset cifar10 --epochs 1 &&
      expect_text "the default cifar10 folder is /usr/share/datasets/cifar10" cifar_default.err \
        'cifar10 is read from /usr/share/datasets/cifar10 '
  fi
  run predict_usage 2 "$CT" predict --checkpoint x.safetensors &&
    expect_text "predict needs inputs" predict_usage.err 'no INPUT to predict'
  run predict_missing 1 "$CT" predict --checkpoint nothere.safetensors a.png &&
    expect_text "predict names a missing checkpoint" predict_missing.err 'cannot read checkpoint nothere\.safetensors'
  ;;
*)
  echo "unknown case $CASE"
  exit 2
  ;;
esac
[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all checks passed"
