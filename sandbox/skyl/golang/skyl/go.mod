module skyl

go 1.19
