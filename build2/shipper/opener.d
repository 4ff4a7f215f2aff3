build2/shipper/opener.o: shipper/opener.c common/ipc.h common/msg.h \
 common/safeopen.h shipper/opener.h shipper/symbolize.h
common/ipc.h:
common/msg.h:
common/safeopen.h:
shipper/opener.h:
shipper/symbolize.h:
