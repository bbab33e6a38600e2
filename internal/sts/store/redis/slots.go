package redis

import (
	"strings"
	"sync"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Lease ids carry the hash slot of their list, so that a lease's index entry (keys.go), found
// from the id alone, lives in the list's slot and the lease scripts write it with the lease, in
// one step, on Redis Cluster too. A Redis lease id is a store.NewLeaseID whose first tagLen
// characters are a tag whose slot is the list's: 26 characters of the same alphabet, of which the
// last 22 (110 bits) are random.

// slots is the number of Redis Cluster hash slots.
const slots = 16384

// tagLen is the length of the slot tag at the front of a lease id.
const tagLen = 4

// crcTable is CRC16-CCITT (XMODEM: polynomial 0x1021, no reflection, initial 0), Redis Cluster's.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

// slot is the Redis Cluster hash slot of key: that of its hash tag (what lies between its first
// "{" and the next "}", when that is not empty), or of the whole key.
func slot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return crc16(key) % slots
}

// leaseAlphabet is store.NewLeaseID's, so that a tag changes nothing of an id's look.
const leaseAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// slotTags is, for each slot, a tag of tagLen characters of leaseAlphabet in that slot: the
// first in the alphabet's order (every slot has one; TestSlotTags). Built once, in a few
// milliseconds, when the process takes its first lease (or ends a list's leases).
var slotTags = sync.OnceValue(func() *[slots]string {
	var tags [slots]string
	found := 0
	var walk func(prefix string, crc uint16) bool
	walk = func(prefix string, crc uint16) bool {
		for i := 0; i < len(leaseAlphabet); i++ {
			c := leaseAlphabet[i]
			next := crc<<8 ^ crcTable[byte(crc>>8)^c]
			if len(prefix)+1 < tagLen {
				if walk(prefix+string(c), next) {
					return true
				}
				continue
			}
			if s := next % slots; tags[s] == "" {
				tags[s] = prefix + string(c)
				if found++; found == slots {
					return true
				}
			}
		}
		return false
	}
	walk("", 0)
	return &tags
})

// newLeaseID returns a fresh lease id for the list whose keys are k: its tag puts the lease's
// index entry in the list's slot.
func newLeaseID(k keys) string {
	return slotTags()[slot(k.list)] + store.NewLeaseID()[tagLen:]
}
