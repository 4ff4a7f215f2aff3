build2/policy/grpc.o: policy/grpc.c policy/policy.h
policy/policy.h:
