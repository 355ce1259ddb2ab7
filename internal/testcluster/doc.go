// Package testcluster holds the test helpers that the tests of cluster, faults
// and cluster/dockerbackend share: starting clusters, clients, faults, polling.
package testcluster
