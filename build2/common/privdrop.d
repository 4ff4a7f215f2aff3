build2/common/privdrop.o: common/privdrop.c common/privdrop.h \
 policy/policy.h
common/privdrop.h:
policy/policy.h:
