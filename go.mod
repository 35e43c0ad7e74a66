module github.com/chirality/harness

go 1.26.0
