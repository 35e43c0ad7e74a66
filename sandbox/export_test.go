package sandbox

import "syscall"

// NoLandlock makes the kernel look as if it had no Landlock until the
// returned function is called.
func NoLandlock() (restore func()) {
	old := getABI
	getABI = func() (int, error) { return 0, syscall.EOPNOTSUPP }
	return func() { getABI = old }
}

// LandlockABI makes the kernel look as if its Landlock had ABI abi until
// the returned function is called.
func LandlockABI(abi int) (restore func()) {
	old := getABI
	getABI = func() (int, error) { return abi, nil }
	return func() { getABI = old }
}
