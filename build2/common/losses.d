build2/common/losses.o: common/losses.c common/msg.h
common/msg.h:
