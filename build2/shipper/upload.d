build2/shipper/upload.o: shipper/upload.c common/log.h common/msg.h \
 common/util.h shipper/upload.h common/grpc/oap.h shipper/spool.h
common/log.h:
common/msg.h:
common/util.h:
shipper/upload.h:
common/grpc/oap.h:
shipper/spool.h:
