#!/bin/sh
# Every host allocation of the library goes through src/core/alloc.c (the
# hook that tests/test_alloc_failure.c fails on purpose): no direct malloc,
# calloc, realloc, aligned_alloc, posix_memalign, strdup or strndup in src/
# outside that file. src/autograd is listed apart until its own allocation
# work converts it.
# Usage: alloc_calls.sh SOURCE_DIR
set -eu
src="$1/src"
hits=$(grep -rnE '(^|[^A-Za-z0-9_>.])(malloc|calloc|realloc|aligned_alloc|posix_memalign|strdup|strndup)[[:space:]]*\(' \
  "$src" --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' \
  | grep -v "^$src/core/alloc\.[ch]:" | grep -v "^$src/autograd/" \
  | grep -vE ':[0-9]+:[[:space:]]*(/\*|\*|//)' || true)
if [ -n "$hits" ]; then
  echo "direct allocation calls (use ct__malloc & co. from core/alloc.h):"
  echo "$hits"
  exit 1
fi
echo "no direct allocation calls in $src"
