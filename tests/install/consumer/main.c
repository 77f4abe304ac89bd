/* Uses the installed library: prints the sum of 1..4. */
#include <ctensor.h>
#include <stdio.h>

int main(void) {
  ct_scope_begin();
  double s = 0;
  ct_status st = ct_item(ct_sum(ct_arange(1, 5, 1, NULL), NULL), &s);
  ct_scope_end();
  if (st != CT_OK || s != 10) {
    fprintf(stderr, "consumer: %s\n", ct_last_error_message());
    return 1;
  }
  printf("consumer: ok (%s)\n", ct_library_version());
  return 0;
}
