build2/policy/supervisor.o: policy/supervisor.c policy/policy.h
policy/policy.h:
