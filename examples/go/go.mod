module toolloop

go 1.19

require skyl v0.0.0

// skyl is the Go client the sandbox ships (sandbox/skyl/golang/skyl); `sandbox init go DIR` copies it.
replace skyl => ../../sandbox/skyl/golang/skyl
