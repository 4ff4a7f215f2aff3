build2/supervisor/discovery.o: supervisor/discovery.c common/log.h \
 supervisor/discovery.h common/config/config.h common/config/template.h \
 common/msg.h
common/log.h:
supervisor/discovery.h:
common/config/config.h:
common/config/template.h:
common/msg.h:
