build2/launcher/main.o: launcher/main.c common/config/config.h \
 common/config/template.h build2/configs/rover_configs.h common/log.h \
 common/msg.h common/privdrop.h policy/policy.h common/util.h \
 launcher/client.h launcher/spawner.h
common/config/config.h:
common/config/template.h:
build2/configs/rover_configs.h:
common/log.h:
common/msg.h:
common/privdrop.h:
policy/policy.h:
common/util.h:
launcher/client.h:
launcher/spawner.h:
