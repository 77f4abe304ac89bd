/* A library the "missing dependency" fake plugin links and the test hides. */
int ct_test_gone_function(void) { return 1; }
