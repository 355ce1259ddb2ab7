package lockcore

import (
	"strconv"
	"strings"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Slot returns the Redis Cluster hash slot of key: CRC16 of the key, or of
// its hash tag (the text between the first "{" and the first "}" after it,
// when not empty), modulo 16384.
func Slot(key string) int {
	return int(crc16(hashTag(key)) % clusterSlots)
}

// hashTag returns the part of key that Redis Cluster hashes.
func hashTag(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// fenceKey is the default fencing counter of key, in key's hash slot so
// that one script may touch both on a Redis Cluster: key + ":fence" when
// key has a hash tag (the counter shares it), "{key}:fence" when key has
// no braces at all (the tag is the whole key), and otherwise (a key with
// braces but no tag, hashed whole) "{t}:fence:key" for the first decimal t
// that hashes to key's slot.
func fenceKey(key string) string {
	switch {
	case hashTag(key) != key:
		return key + ":fence"
	case !strings.ContainsAny(key, "{}"):
		return "{" + key + "}:fence"
	}
	want := Slot(key)
	for t := 0; ; t++ { // about 16384 tries at most: CRC16 spreads the tags
		if tag := strconv.Itoa(t); Slot(tag) == want {
			return "{" + tag + "}:fence:" + key
		}
	}
}
