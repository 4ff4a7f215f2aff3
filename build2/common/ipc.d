build2/common/ipc.o: common/ipc.c common/ipc.h
common/ipc.h:
