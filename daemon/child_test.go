package daemon

// dispatchFakeChild lets the test binary stand in for child programs;
// -1 means "run the tests".
func dispatchFakeChild() int { return -1 }
