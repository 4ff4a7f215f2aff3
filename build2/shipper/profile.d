build2/shipper/profile.o: shipper/profile.c shipper/profile.h \
 build2/proto/pprof/profile.pb-c.h
shipper/profile.h:
build2/proto/pprof/profile.pb-c.h:
