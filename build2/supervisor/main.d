build2/supervisor/main.o: supervisor/main.c common/ipc.h common/log.h \
 common/msg.h common/privdrop.h policy/policy.h common/util.h \
 common/config/config.h common/config/template.h common/config/passed.h \
 supervisor/backend.h common/grpc/oap.h supervisor/discovery.h
common/ipc.h:
common/log.h:
common/msg.h:
common/privdrop.h:
policy/policy.h:
common/util.h:
common/config/config.h:
common/config/template.h:
common/config/passed.h:
supervisor/backend.h:
common/grpc/oap.h:
supervisor/discovery.h:
