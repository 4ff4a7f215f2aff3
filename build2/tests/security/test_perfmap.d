build2/tests/security/test_perfmap.o: tests/security/test_perfmap.c \
 common/safeopen.h
common/safeopen.h:
