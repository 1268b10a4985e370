module toolloop

go 1.19
