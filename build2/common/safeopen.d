build2/common/safeopen.o: common/safeopen.c common/safeopen.h
common/safeopen.h:
