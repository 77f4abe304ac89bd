#!/usr/bin/env bash
# Runs bench_rnn (a 2-layer LSTM training step) and bench/peers_rnn.py in the same run and
# prints the ratios ("torch" is nn.LSTM, "torch_ops" the same LSTM as per-step torch ops):
#   bench/rnn.sh BUILD_DIR [--threads N] [--budget SECONDS]
exec "$(dirname "$0")/same_run.sh" rnn "$@"
