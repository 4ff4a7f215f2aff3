build2/launcher/client.o: launcher/client.c common/ipc.h common/util.h \
 launcher/client.h common/msg.h
common/ipc.h:
common/util.h:
launcher/client.h:
common/msg.h:
