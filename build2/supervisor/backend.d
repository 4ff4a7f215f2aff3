build2/supervisor/backend.o: supervisor/backend.c common/ipc.h \
 common/log.h common/util.h supervisor/backend.h common/config/config.h \
 common/config/template.h common/grpc/oap.h supervisor/discovery.h \
 common/msg.h supervisor/commands.h
common/ipc.h:
common/log.h:
common/util.h:
supervisor/backend.h:
common/config/config.h:
common/config/template.h:
common/grpc/oap.h:
supervisor/discovery.h:
common/msg.h:
supervisor/commands.h:
