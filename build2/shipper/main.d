build2/shipper/main.o: shipper/main.c common/config/config.h \
 common/config/template.h common/config/passed.h common/ipc.h \
 common/log.h common/msg.h common/privdrop.h policy/policy.h \
 shipper/opener.h shipper/symbolize.h shipper/spool.h shipper/task.h \
 shipper/profile.h shipper/unwind.h shipper/upload.h common/grpc/oap.h
common/config/config.h:
common/config/template.h:
common/config/passed.h:
common/ipc.h:
common/log.h:
common/msg.h:
common/privdrop.h:
policy/policy.h:
shipper/opener.h:
shipper/symbolize.h:
shipper/spool.h:
shipper/task.h:
shipper/profile.h:
shipper/unwind.h:
shipper/upload.h:
common/grpc/oap.h:
