build2/shipper/kallsyms.o: shipper/kallsyms.c shipper/kallsyms.h \
 shipper/lines.h
shipper/kallsyms.h:
shipper/lines.h:
