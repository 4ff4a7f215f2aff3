build2/shipper/unwind.o: shipper/unwind.c shipper/unwind.h common/msg.h \
 shipper/symbolize.h
shipper/unwind.h:
common/msg.h:
shipper/symbolize.h:
