package notify

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxFile bounds a notify configuration file.
const MaxFile = 1 << 20

// FileConfig is a notify configuration file (`harness serve
// --notify-config FILE`):
//
//	notify:
//	  webhooks: [https://hooks.example/harness]
//	  ntfy: [https://ntfy.sh/my-topic]
//	  irc: [ircs://irc.example:6697/#dev]
//	  irc_nick: hnotify
//	  idle: 30m
//	  link: http://my-host:8787/
//
// The flags add to its lists and replace its idle, link and irc_nick. The webhooks'
// secret is never in it: HARNESS_NOTIFY_SECRET.
type FileConfig struct {
	Notify struct {
		Webhooks []string `yaml:"webhooks"`
		Ntfy     []string `yaml:"ntfy"`
		IRC      []string `yaml:"irc"`
		IRCNick  string   `yaml:"irc_nick"`
		Idle     string   `yaml:"idle"`
		Link     string   `yaml:"link"`
	} `yaml:"notify"`
}

// LoadFile reads path into cfg: its lists are added before cfg's, its
// idle and link used where cfg has none. Unknown keys are refused.
func LoadFile(path string, cfg *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	if len(data) > MaxFile {
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrConfig, path, MaxFile)
	}
	var fc FileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	cfg.Webhooks = append(fc.Notify.Webhooks, cfg.Webhooks...)
	cfg.Ntfy = append(fc.Notify.Ntfy, cfg.Ntfy...)
	cfg.IRC = append(fc.Notify.IRC, cfg.IRC...)
	if cfg.IRCNick == "" {
		cfg.IRCNick = fc.Notify.IRCNick
	}
	if cfg.Idle == 0 && fc.Notify.Idle != "" {
		d, err := time.ParseDuration(fc.Notify.Idle)
		if err != nil || d < 0 {
			return fmt.Errorf("%w: %s: idle %q is not a duration like 30m", ErrConfig, path, fc.Notify.Idle)
		}
		cfg.Idle = d
	}
	if cfg.Link == "" {
		cfg.Link = fc.Notify.Link
	}
	return nil
}
