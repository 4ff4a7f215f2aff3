build2/shipper/elfsym.o: shipper/elfsym.c shipper/elfsym.h \
 shipper/demangle.h shipper/gopclntab.h
shipper/elfsym.h:
shipper/demangle.h:
shipper/gopclntab.h:
