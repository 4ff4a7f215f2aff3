build2/common/config/passed.o: common/config/passed.c \
 common/config/passed.h common/config/config.h common/config/template.h
common/config/passed.h:
common/config/config.h:
common/config/template.h:
