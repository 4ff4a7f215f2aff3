build2/tests/security/test_deploy.o: tests/security/test_deploy.c \
 tests/integration/harness.h
tests/integration/harness.h:
