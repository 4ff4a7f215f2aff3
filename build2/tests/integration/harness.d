build2/tests/integration/harness.o: tests/integration/harness.c \
 tests/integration/harness.h
tests/integration/harness.h:
