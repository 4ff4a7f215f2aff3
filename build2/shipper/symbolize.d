build2/shipper/symbolize.o: shipper/symbolize.c shipper/lines.h \
 shipper/symbolize.h shipper/elfsym.h shipper/kallsyms.h
shipper/lines.h:
shipper/symbolize.h:
shipper/elfsym.h:
shipper/kallsyms.h:
