package lockcore

import "github.com/redis/go-redis/v9/maintnotifications"

// NoMaintNotifications is the maintenance-notifications setting to give a
// go-redis client that locks share (redis.Options.MaintNotificationsConfig):
// disabled. With go-redis v9.23's default, auto, each new connection of a
// Conn() rewrites the options that every Conn of the client shares when the
// server refuses the handshake (Redis before 8 does), under a lock of its
// own Conn: a data race when two locks open connections on one client at
// once, as lockcore's per-node workers do.
func NoMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
