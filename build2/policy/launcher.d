build2/policy/launcher.o: policy/launcher.c policy/policy.h
policy/policy.h:
