build2/shipper/spool.o: shipper/spool.c shipper/spool.h
shipper/spool.h:
