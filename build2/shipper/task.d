build2/shipper/task.o: shipper/task.c common/util.h shipper/task.h \
 common/msg.h shipper/profile.h shipper/spool.h shipper/symbolize.h \
 shipper/unwind.h shipper/upload.h common/grpc/oap.h
common/util.h:
shipper/task.h:
common/msg.h:
shipper/profile.h:
shipper/spool.h:
shipper/symbolize.h:
shipper/unwind.h:
shipper/upload.h:
common/grpc/oap.h:
