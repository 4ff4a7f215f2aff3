build2/tests/security/test_backend_bounds.o: \
 tests/security/test_backend_bounds.c tests/integration/harness.h
tests/integration/harness.h:
