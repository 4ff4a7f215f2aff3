build2/worker/ship.o: worker/ship.c common/ipc.h worker/ship.h \
 common/msg.h
common/ipc.h:
worker/ship.h:
common/msg.h:
