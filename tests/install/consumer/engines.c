/* Which plugins a program has: `engines mpi` exits 0 when the MPI engine is
 * available and linked in (a static program with libctensor-mpi.a);
 * `engines -mpi` exits 0 when it is not, and the reason names the archive
 * to link or, for a plugin this ctensor was built without, what to install.
 * Names: cuda, mpi, nccl. */
#include <ctensor.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  int bad = 0;
  for (int a = 1; a < argc; a++) {
    const char *want = argv[a][0] == '-' ? argv[a] + 1 : argv[a];
    bool present = argv[a][0] != '-';
    bool seen = false;
    for (int i = 0; i < ct_backend_count(); i++) {
      ct_backend_info info;
      if (ct_backend_get_info(i, &info) != CT_OK || strcmp(info.name, want) != 0) continue;
      seen = true;
      printf("engines: %s: %s%s\n", want, info.available ? "available" : "not available",
             info.builtin ? " (linked in)" : "");
      if (!info.available) printf("engines:   %s\n", info.error);
      if (present && !(info.available && info.builtin)) bad = 1;
      bool reason_helps = strstr(info.error, "libctensor-") || strstr(info.error, "built without");
      if (!present && (info.available || !reason_helps)) bad = 1;
    }
    if (!seen) {
      printf("engines: no plugin named %s\n", want);
      bad = 1;
    }
  }
  return bad;
}
