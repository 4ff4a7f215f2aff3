build2/shipper/demangle.o: shipper/demangle.c shipper/demangle.h
shipper/demangle.h:
