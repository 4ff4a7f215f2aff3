build2/common/config/template.o: common/config/template.c \
 common/config/template.h
common/config/template.h:
