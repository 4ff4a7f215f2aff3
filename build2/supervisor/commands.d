build2/supervisor/commands.o: supervisor/commands.c common/msg.h \
 supervisor/commands.h
common/msg.h:
supervisor/commands.h:
