build2/policy/worker.o: policy/worker.c policy/policy.h
policy/policy.h:
