build2/worker/main.o: worker/main.c common/ipc.h common/log.h \
 common/msg.h common/privdrop.h policy/policy.h common/util.h \
 worker/profiler.h worker/ship.h
common/ipc.h:
common/log.h:
common/msg.h:
common/privdrop.h:
policy/policy.h:
common/util.h:
worker/profiler.h:
worker/ship.h:
