build2/policy/shipper.o: policy/shipper.c policy/policy.h
policy/policy.h:
