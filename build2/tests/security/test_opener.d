build2/tests/security/test_opener.o: tests/security/test_opener.c \
 common/ipc.h common/msg.h launcher/spawner.h tests/security/attacker.h \
 tests/integration/harness.h
common/ipc.h:
common/msg.h:
launcher/spawner.h:
tests/security/attacker.h:
tests/integration/harness.h:
