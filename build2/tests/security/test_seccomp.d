build2/tests/security/test_seccomp.o: tests/security/test_seccomp.c \
 common/privdrop.h policy/policy.h tests/integration/harness.h
common/privdrop.h:
policy/policy.h:
tests/integration/harness.h:
