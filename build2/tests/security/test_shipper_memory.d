build2/tests/security/test_shipper_memory.o: \
 tests/security/test_shipper_memory.c tests/integration/harness.h
tests/integration/harness.h:
