#!/bin/sh
# Every host allocation of the library goes through src/core/alloc.c (the
# hook that tests/test_alloc_failure.c fails on purpose): no direct malloc,
# calloc, realloc, aligned_alloc, posix_memalign, strdup or strndup in src/
# outside that file. src/autograd is listed apart until its own allocation
# work converts it.
#
# Allowed below, one "path:code" pattern a line with its reason, are the
# allocations that are no part of the library's tensor work and where an
# injected failure would do harm instead of testing a CT_ERR_OOM path:
# - src/backend/cpu/blas.c, env_set: keeps a copy of the program's
#   OPENBLAS_NUM_THREADS (or OPENBLAS_CORETYPE) across the dlopen of OpenBLAS
#   (loading, once per process); a failed copy would silently drop the
#   program's setting, and nothing returns CT_ERR_OOM from there.
# Usage: alloc_calls.sh SOURCE_DIR
set -eu
src="$1/src"
hits=$(grep -rnE '(^|[^A-Za-z0-9_>.])(malloc|calloc|realloc|aligned_alloc|posix_memalign|strdup|strndup)[[:space:]]*\(' \
  "$src" --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' \
  | grep -v "^$src/core/alloc\.[ch]:" | grep -v "^$src/autograd/" \
  | grep -vE "^$src/backend/cpu/blas\.c:[0-9]+:  env_override o = \{name, old \? strdup\(old\) : NULL\};\$" \
  | grep -vE ':[0-9]+:[[:space:]]*(/\*|\*([[:space:]]|/|$)|//)' || true)
if [ -n "$hits" ]; then
  echo "direct allocation calls (use ct__malloc & co. from core/alloc.h):"
  echo "$hits"
  exit 1
fi
echo "no direct allocation calls in $src"
