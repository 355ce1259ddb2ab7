// Package dockerbackend runs the Redis processes of a [cluster.Cluster] in
// Docker containers instead of as children of this process: [Backend] is a
// [cluster.Backend] whose processes are containers of an image built
// locally from the host's redis-server ([BuildRedisImage]), or of an image
// the caller names, on the host's network, so everything above the backend
// (proxies, topologies, faults) works unchanged. It runs etcd members too
// ([Backend.EtcdPlace]), as containers of an image built from the host's
// etcd ([BuildEtcdImage]), and ZooKeeper members
// ([Backend.ZooKeeperPlace]), as containers of an image built from the
// host's JVM and ZooKeeper's jars ([BuildZooKeeperImage]).
//
// Containers are labelled with their owner's pid and removed when the
// backend closes, by [cluster.KillAll] and [cluster.ReapOnSignal], and
// after a crash by [RemoveOrphanContainers]. [BuildRunnerImage] builds the
// image of lockpick itself that deploy/ runs shards in. [Available] says
// whether a Docker engine answers; without one, the package's calls return
// an error wrapping [ErrNoDocker].
package dockerbackend
