package netlink

import "errors"

var (
	// ErrNoPort means no free loopback port could be reserved.
	ErrNoPort = errors.New("netlink: no free port")
	// ErrWedged means a change to a proxied link did not finish in time
	// (a toxiproxy deadlock); the link stays unusable for the rest of the run.
	ErrWedged = errors.New("netlink: proxy link wedged")
)
