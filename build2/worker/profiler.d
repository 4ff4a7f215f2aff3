build2/worker/profiler.o: worker/profiler.c common/stackcount.h \
 build2/offcpu.skel.h build2/oncpu.skel.h worker/profiler.h common/msg.h \
 worker/ship.h
common/stackcount.h:
build2/offcpu.skel.h:
build2/oncpu.skel.h:
worker/profiler.h:
common/msg.h:
worker/ship.h:
