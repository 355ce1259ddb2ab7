package lockcore

import "testing"

// TestFenceKey_SameSlot: the default fencing counter hashes to the key's
// slot for every shape of key, tags, empty tags and stray braces included.
func TestFenceKey_SameSlot(t *testing.T) {
	for _, key := range []string{"lock", "a{b}c", "{b}", "x{}y", "a}b", "{}z", "a{b", "}{", "{{a}b}"} {
		f := fenceKey(key)
		if f == key || Slot(f) != Slot(key) {
			t.Errorf("fenceKey(%q) = %q, slot %d; the key's is %d", key, f, Slot(f), Slot(key))
		}
	}
	// Values Redis's CLUSTER KEYSLOT gives (cluster tests compare the rest).
	for key, want := range map[string]int{"lock": 8718, "{lock}:fence": 8718, "foo": 12182, "{user1000}.following": 3443} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}
