module rover/tests/gotls

go 1.19
