package etcdlock

import (
	"context"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
)

// The server's lock service (v3lockpb.Lock, in etcd's server module) is
// called here without its generated code: the two requests are encoded by
// hand with protowire and sent on the client's own gRPC connection. This
// keeps etcd's server module and its dependencies out of lockpick.
const (
	v3lockLockMethod   = "/v3lockpb.Lock/Lock"
	v3lockUnlockMethod = "/v3lockpb.Lock/Unlock"
)

// v3lockLock asks the server to take the lock name for lease, waiting as
// long as ctx allows, and returns the key the server holds it under and
// the reply's header.
func v3lockLock(ctx context.Context, cli *clientv3.Client, name string, lease clientv3.LeaseID) (string, *pb.ResponseHeader, error) {
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType) // LockRequest.name
	req = protowire.AppendBytes(req, []byte(name))
	req = protowire.AppendTag(req, 2, protowire.VarintType) // LockRequest.lease
	req = protowire.AppendVarint(req, uint64(lease))
	var resp []byte
	if err := cli.ActiveConnection().Invoke(ctx, v3lockLockMethod, &req, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return "", nil, err
	}
	return decodeLockResponse(resp)
}

// v3lockUnlock asks the server to delete key, the key a Lock returned.
func v3lockUnlock(ctx context.Context, cli *clientv3.Client, key string) error {
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType) // UnlockRequest.key
	req = protowire.AppendBytes(req, []byte(key))
	var resp []byte
	return cli.ActiveConnection().Invoke(ctx, v3lockUnlockMethod, &req, &resp, grpc.ForceCodec(rawCodec{}))
}

// decodeLockResponse reads LockResponse{header = 1, key = 2}.
func decodeLockResponse(b []byte) (string, *pb.ResponseHeader, error) {
	var (
		key string
		hdr = new(pb.ResponseHeader)
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, fmt.Errorf("etcdlock: bad lock response: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return "", nil, fmt.Errorf("etcdlock: bad lock response: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", nil, fmt.Errorf("etcdlock: bad lock response: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1:
			if err := hdr.Unmarshal(v); err != nil {
				return "", nil, fmt.Errorf("etcdlock: bad lock response header: %w", err)
			}
		case 2:
			key = string(v)
		}
	}
	if key == "" {
		return "", nil, errors.New("etcdlock: lock response without a key")
	}
	return key, hdr, nil
}

// rawCodec passes already encoded messages (*[]byte) through gRPC.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("etcdlock: raw codec cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("etcdlock: raw codec cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
