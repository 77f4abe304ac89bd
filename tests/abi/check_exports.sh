#!/usr/bin/env bash
# The shared library's ABI: what libctensor exports and what it depends on.
#   check_exports.sh LIBCTENSOR SOURCE_DIR CC [PLUGIN...]
# Checks that
#  - libctensor.so exports only ct_ functions (no ct__ internal), every one of
#    them declared in a public header, and every function the headers declare
#    (gcc -aux-info over ctensor.h and ctensor/dlpack.h) is exported: a
#    declaration without CT_API or without a definition fails here, naming it;
#  - every public declaration carries CT_API on its line (greppable);
#  - libctensor.so needs no CUDA, NCCL, MPI, C++, OpenMP or BLAS library
#    (readelf -d; the BLAS is opened on first use);
#  - each plugin exports ct_plugin_entry only.
set -euo pipefail
lib=$1
src=$2
cc=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
say() { echo "abi: $*"; }

# Declared: the prototypes of include/ as the compiler sees them.
printf '#include <ctensor.h>\n#include <ctensor/dlpack.h>\n' >"$tmp/h.c"
"$cc" -fsyntax-only -I"$src/include" -aux-info "$tmp/aux.txt" "$tmp/h.c"
grep "$src/include/" "$tmp/aux.txt" | grep -v '^/\*[^*]*\*/ static' |
  sed -E 's/.*[ *](ct_[A-Za-z0-9_]+) \(.*/\1/' | sort -u >"$tmp/declared"
# Exported: defined dynamic symbols, without their version.
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u >"$tmp/exported"
[ -s "$tmp/declared" ] || { say "no declarations found under $src/include"; exit 1; }

bad=$(grep -v '^ct_[a-z0-9]' "$tmp/exported" || true)
if [ -n "$bad" ]; then
  say "exports symbols outside the ct_ API:"; echo "$bad" | sed 's/^/  /'; fail=1
fi
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$missing" ]; then
  say "declared in include/ but not exported (CT_API missing, or never defined):"
  echo "$missing" | sed 's/^/  /'; fail=1
fi
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
if [ -n "$extra" ]; then
  say "exported but declared in no public header:"; echo "$extra" | sed 's/^/  /'; fail=1
fi
# Each declaration starts with CT_API on the line that names the function.
while read -r f; do
  grep -rqE "^CT_API .*[ *]$f\(" "$src/include" || { say "$f: no 'CT_API ... $f(' line in include/"; fail=1; }
done <"$tmp/declared"

# Dependencies of the core.
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
banned=$(echo "$needed" | grep -Ei 'cuda|cublas|cudnn|nccl|mpi|stdc\+\+|gomp|openblas' || true)
if [ -n "$banned" ]; then
  say "$(basename "$lib") depends on libraries the core must not need:"; echo "$banned" | sed 's/^/  /'; fail=1
fi

for p in "$@"; do
  syms=$(nm -D --defined-only "$p" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u | tr '\n' ' ')
  if [ "$syms" != "ct_plugin_entry " ]; then
    say "$(basename "$p") exports '$syms', expected ct_plugin_entry only"; fail=1
  fi
done

[ "$fail" = 0 ] || exit 1
say "$(wc -l <"$tmp/exported") ct_ functions exported, all declared with CT_API; core needs: $(echo $needed)"
