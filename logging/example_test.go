package logging_test

import (
	"fmt"
	"os"

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
		Str("sessionId", "0b6f…").
		Str("userMessage", logging.Truncate("please review the change in session/store.go", 200)).
		Str("persona", "REVIEWER").
		Str("mode", "workbench").
		Msg(logging.EventTurnStart)
	closer.Close()

	data, _ := os.ReadFile(logging.Path(root))
	line := string(data)
	fmt.Println(line[len(`{"timestamp":"2026-11-25T23:19:57.123Z"`):])
	// Output: ,"sessionId":"0b6f…","level":"info","event":"turn:start","data":{"userMessage":"please review the change in session/store.go","persona":"REVIEWER","mode":"workbench"}}

}
