build2/shipper/gopclntab.o: shipper/gopclntab.c shipper/gopclntab.h
shipper/gopclntab.h:
