build2/common/grpc/oap.o: common/grpc/oap.c common/grpc/oap.h
common/grpc/oap.h:
