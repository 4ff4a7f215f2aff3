build2/launcher/spawner.o: launcher/spawner.c common/ipc.h common/log.h \
 common/msg.h common/safeopen.h common/util.h launcher/spawner.h
common/ipc.h:
common/log.h:
common/msg.h:
common/safeopen.h:
common/util.h:
launcher/spawner.h:
