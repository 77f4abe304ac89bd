/* The PyTorch differential test's op table (tests/test_oracle.c): a case's
 * parameters as the generator wrote them (tests/oracle/gen_cases.py) and the
 * dispatch from an op name to the ctensor call, including the autograd
 * compositions ("chain"). */
#ifndef CT_ORACLE_OPS_H
#define CT_ORACLE_OPS_H

#include <ctensor.h>

#define ORACLE_MAX_IN 8
#define ORACLE_MAX_PARAMS 16

/* One case line: "case NAME OP NIN TOL KEY=VALUE ..." (tokens point into it). */
typedef struct oracle_case {
  const char *name, *op, *tol;
  int nin;
  const char *keys[ORACLE_MAX_PARAMS], *vals[ORACLE_MAX_PARAMS];
  int nparams;
} oracle_case;

const char *oracle_param(const oracle_case *c, const char *key);
double oracle_param_d(const oracle_case *c, const char *key, double def);
int64_t oracle_param_i(const oracle_case *c, const char *key, int64_t def);
/* A comma-separated integer list; returns its length, or -1 when absent. */
int oracle_param_list(const oracle_case *c, const char *key, int64_t *out, int max);
bool oracle_param_is(const oracle_case *c, const char *key, const char *value);

/* What a case hands its op: inputs on the device under test, the expected
 * result's dtype and shape (for out= variants and creation ops). */
typedef struct oracle_call {
  const oracle_case *c;
  ct_tensor **in;
  ct_dtype want_dtype;
  const int64_t *want_shape;
  int want_ndim;
} oracle_call;

/* Runs the case's op; NULL (with the library's error, or a test failure
 * already reported) when it fails. */
ct_tensor *oracle_dispatch(const oracle_call *k);

#endif /* CT_ORACLE_OPS_H */
