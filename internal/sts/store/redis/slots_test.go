package redis

import (
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The slots Redis Cluster gives these keys (CLUSTER KEYSLOT).
func TestSlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":            0x31c3, // CRC16/XMODEM's check value
		"foo":                  12182,
		"bar":                  5061,
		"{user1000}.following": slot("user1000"),
		"foo{}{bar}":           slot("foo{}{bar}"),
		"foo{{bar}}zap":        slot("{bar"),
		"foo{bar}{zap}":        slot("bar"),
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
	if slot("foo{}{bar}") != crc16("foo{}{bar}")%slots {
		t.Error("an empty tag is no tag")
	}
}

// Every slot has a tag, of the lease ids' alphabet, and a lease id's index entry lives in its
// list's slot.
func TestSlotTags(t *testing.T) {
	tags := slotTags()
	for s, tag := range tags {
		if len(tag) != tagLen || strings.Trim(tag, leaseAlphabet) != "" || slot(tag) != uint16(s) {
			t.Fatalf("slot %d has the tag %q", s, tag)
		}
	}
	st := &Store{prefix: "sts:ns/name:"}
	for _, name := range []string{"", "q", "}", "users.csv", "a{b}c", "\u00e9t\u00e9"} {
		k := st.keysOf(name)
		id := newLeaseID(k)
		if len(id) != len(store.NewLeaseID()) || strings.Trim(id, leaseAlphabet) != "" {
			t.Errorf("lease id %q", id)
		}
		if slot(st.leaseIndex(id)) != slot(k.list) {
			t.Errorf("list %q: lease %s's index entry %q is not in the list's slot", name, id, st.leaseIndex(id))
		}
	}
}
