build2/shipper/lines.o: shipper/lines.c shipper/lines.h
shipper/lines.h:
