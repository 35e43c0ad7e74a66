package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// A shutdown that always ends: how every long-running command (serve;
// agent serve, tui, rpc and agents adopt it) stops on SIGINT or SIGTERM.
//
//	sigs := notifyStop()           // before serving: SIGINT and SIGTERM
//	defer signal.Stop(sigs)
//	… serve; wait for <-sigs (or the server failing) …
//	gracefulStop(sigs, grace, logger, func(ctx context.Context) {
//		h.Shutdown(ctx) // interrupt turns; when ctx ends, kill what is left
//		gw.Close()      // end event streams, stuck ones at once
//		srv.Close()
//	})
//
// The stop function gets a context that ends when the grace period is over
// or at a second SIGINT/SIGTERM, whichever comes first. Until then it may
// let work finish (turns wind down, streams deliver their ends); once ctx
// is done it must finish promptly — kill, close, return. gracefulStop
// returns when stop returns, or hardStopAfter past the context's end if
// stop has not returned by then (it logs that it gave up waiting), so the
// command always exits within grace + hardStopAfter, and a second signal
// exits at once. Children are killed by the stop function (the Harness
// kills whole process groups when ctx ends), not abandoned.

// shutdownGrace is how long running turns get to finish after
// SIGINT or SIGTERM before what is left is killed.
const shutdownGrace = 10 * time.Second

// hardStopAfter is how long gracefulStop waits for the stop function past
// its context's end.
const hardStopAfter = 2 * time.Second

// notifyStop returns a channel receiving SIGINT and SIGTERM (room for
// two: the first starts the shutdown, the second cuts it short). Call
// signal.Stop on it when done.
func notifyStop() chan os.Signal {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	return sigs
}

// gracefulStop runs stop as the package doc above says and reports
// whether it returned in time (false: it was abandoned after
// hardStopAfter). sigs may be nil (no second signal to wait for).
func gracefulStop(sigs <-chan os.Signal, grace time.Duration, log *zerolog.Logger, stop func(ctx context.Context)) bool {
	if log == nil {
		nop := zerolog.Nop()
		log = &nop
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop(ctx)
	}()
	for {
		select {
		case <-done:
			return true
		case sig := <-sigs:
			if ctx.Err() == nil {
				log.Warn().Str("signal", sig.String()).Msg("second signal: stopping now, killing what runs")
				cancel()
			}
		case <-ctx.Done():
			select {
			case <-done:
				return true
			case <-time.After(hardStopAfter):
				log.Error().Dur("after", hardStopAfter).Msg("shutdown did not finish in time; exiting anyway")
				return false
			}
		}
	}
}
