package redis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Connection says how to reach Redis: what the table server's --redis-* flags give.
type Connection struct {
	// URL is redis://[user:password@]host:port/db, or rediss:// for TLS. With SentinelMaster its
	// host is not used (the sentinels name the master); with Cluster it is the first node.
	URL string
	// Username, when not empty, replaces the URL's user: the Redis ACL user (read from
	// --redis-username-file, so that it comes from the same Secret as the password).
	Username string
	// Password, when not empty, replaces the URL's (read from --redis-password-file, so that no
	// secret sits in argv or the environment).
	Password string
	// CAFile is a PEM bundle of the certificate authorities that a rediss:// server's
	// certificate is checked against, instead of the system's.
	CAFile string
	// SentinelMaster and SentinelAddrs find the master through Redis Sentinel.
	SentinelMaster string
	SentinelAddrs  []string
	// Cluster makes the URL's host the first node of a Redis Cluster.
	Cluster bool
	// WaitTimeout is the longest a command may rightly take on top of Redis' answer: the WAIT of
	// Options.MinReplicas (its ReplicaTimeout).
	WaitTimeout time.Duration
}

// ClientName is the name of every connection a table server opens (CLIENT SETNAME).
const ClientName = "sts"

// dialTimeout and readTimeout bound a connection attempt and one answer: a Redis that stops
// answering is a 503 within seconds, not a hung client.
const (
	dialTimeout = 2 * time.Second
	readTimeout = 3 * time.Second
)

// Client opens the connection c describes. It does not dial yet.
func (c Connection) Client() (goredis.UniversalClient, error) {
	if c.SentinelMaster != "" && c.Cluster {
		return nil, errors.New("redis: Sentinel and Cluster cannot be used together")
	}
	if c.SentinelMaster != "" && len(c.SentinelAddrs) == 0 || c.SentinelMaster == "" && len(c.SentinelAddrs) > 0 {
		return nil, errors.New("redis: Sentinel needs both a master name and the sentinels' addresses")
	}
	o, err := goredis.ParseURL(c.URL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	if c.Username != "" {
		o.Username = c.Username
	}
	if c.Password != "" {
		o.Password = c.Password
	}
	if c.CAFile != "" {
		if o.TLSConfig == nil {
			return nil, errors.New("redis: a CA file needs a rediss:// URL")
		}
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis CA file %s: no PEM certificate in it", c.CAFile)
		}
		o.TLSConfig.RootCAs = pool
		o.TLSConfig.MinVersion = tls.VersionTLS12
	}
	u := &goredis.UniversalOptions{
		Addrs:      []string{o.Addr},
		DB:         o.DB,
		Username:   o.Username,
		Password:   o.Password,
		TLSConfig:  o.TLSConfig,
		MasterName: c.SentinelMaster,
		// A command whose answer was lost may have run: retrying a consuming script would
		// take a second line and lose the first. The client retries, not the server. On Cluster
		// that means no redirect either (go-redis retries timeouts along with MOVED): a MOVED
		// is a 503 while the client learns the new slot map.
		MaxRetries:   -1,
		MaxRedirects: -1,
		DialTimeout:  dialTimeout,
		// One dial per command: the client's default of five made a command wait five dial
		// timeouts for a Redis that does not answer.
		DialerRetries: 1,
		ReadTimeout:   readTimeout + c.WaitTimeout,
		WriteTimeout:  readTimeout,
		IsClusterMode: c.Cluster,
		// Named, so that CLIENT LIST and SLOWLOG tell the table servers' connections from the
		// other applications' on a shared Redis.
		ClientName: ClientName,
		// A client that goes away ends its request to Redis too.
		ContextTimeoutEnabled: true,
	}
	if c.SentinelMaster != "" {
		u.Addrs = c.SentinelAddrs
	}
	if c.Cluster && o.DB != 0 {
		return nil, errors.New("redis: Cluster has only database 0")
	}
	return goredis.NewUniversalClient(u), nil
}
