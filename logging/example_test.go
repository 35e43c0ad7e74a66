package logging_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/chirality/harness/logging"
)

func Example() {
	root, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(root)

	log, closer, err := logging.New(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	log.Info().
		Str("persona", "REVIEWER").
		Str("mode", "workbench").
		Str("text", logging.Truncate("please review the change in session/store.go", 200)).
		Msg("turn started")
	closer.Close()

	data, _ := os.ReadFile(logging.Path(root))
	fmt.Println(strings.Contains(string(data), `"message":"turn started"`))
	// Output: true
}
