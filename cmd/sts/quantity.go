package main

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// byteSizeFlag is a size in bytes: a plain number, or a Kubernetes-style quantity such as 512Mi,
// 1.5Gi or 100M, rounded up to a whole byte.
type byteSizeFlag struct{ v *int64 }

func (f byteSizeFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f byteSizeFlag) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*f.v = n
	return nil
}

// byteSuffixes are the suffixes of Kubernetes quantities: binary (Ki = 1024) and decimal
// (k = 1000).
var byteSuffixes = []struct {
	suffix string
	factor int64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

func parseByteSize(s string) (int64, error) {
	number, factor := strings.TrimSpace(s), int64(1)
	for _, b := range byteSuffixes {
		if n, found := strings.CutSuffix(number, b.suffix); found {
			number, factor = n, b.factor
			break
		}
	}
	invalid := fmt.Errorf("%q is not a size in bytes (a number, optionally with a suffix such as Ki, Mi, Gi, k, M, G)", s)
	// Only digits with an optional fraction: big.Rat would also take signs, exponents and "1/2".
	digits, fraction, _ := strings.Cut(number, ".")
	if digits == "" && fraction == "" || strings.Trim(digits+fraction, "0123456789") != "" {
		return 0, invalid
	}
	r, ok := new(big.Rat).SetString(number)
	if !ok {
		return 0, invalid
	}
	r.Mul(r, new(big.Rat).SetInt64(factor))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if new(big.Rat).SetInt(n).Cmp(r) < 0 {
		n.Add(n, big.NewInt(1)) // round a fraction of a byte up, as Kubernetes does
	}
	if !n.IsInt64() {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n.Int64(), nil
}
