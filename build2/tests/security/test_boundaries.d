build2/tests/security/test_boundaries.o: tests/security/test_boundaries.c \
 common/ipc.h common/msg.h tests/security/attacker.h \
 tests/integration/harness.h
common/ipc.h:
common/msg.h:
tests/security/attacker.h:
tests/integration/harness.h:
