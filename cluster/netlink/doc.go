// Package netlink is the network between lockpick's nodes: the in-process
// toxiproxy links every node is reached through, the filters that partition
// a Redis Cluster bus or etcd's peer traffic between chosen members, and the
// loopback ports they listen on. Package cluster puts a node behind its
// links; package faults breaks them. netlink imports neither.
//
// # Links
//
// [Proxies] is a toxiproxy server without its HTTP API; [Proxies.Add] starts
// a [Link] on 127.0.0.1 forwarding to one upstream. A link's faults are
// toxiproxy toxics ([Link.AddToxic], [Link.RemoveToxic]) or a cut
// ([Link.Cut], [Link.CutBy] for one of several holders, [Link.Restore]),
// and apply to established connections too. Changes to a link run one at a
// time, each bounded: toxiproxy can deadlock removing a toxic while a
// connection dies (Shopify/toxiproxy#558), and a change stuck past the bound
// leaves the link wedged, every later change failing with [ErrWedged].
//
// # Filters
//
// A proxy cannot tell peers apart, so a partition between chosen members
// needs a filter that can. A [BusFilter] reads the sender's node id from the
// first message of each Redis Cluster bus connection; a [PeerFilter] asks a
// function which etcd member dialled. Both black-hole a connection across
// the cut (held open, nothing forwarded) and close it when the cut heals, so
// the peers reconnect on a clean stream. Who is cut off from whom is the
// caller's to say, through the functions the constructors take.
//
// # Ports
//
// [ReservePort] reserves a loopback port below the kernel's ephemeral range,
// under a file lock shared by every lockpick run on the host, so two runs
// never collide and a link or node that stays down finds its port free when
// it comes back. A [PortReservation] holds it until Release.
package netlink
