build2/common/config/config.o: common/config/config.c \
 common/config/config.h common/config/template.h common/util.h
common/config/config.h:
common/config/template.h:
common/util.h:
