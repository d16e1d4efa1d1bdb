package sharedcache

import (
	"crypto/hmac"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// message is one entry of the purge stream, as JSON: a purge (Kind, Value), or the word
// (Done) that the store was purged of the purge ID names. At is when the purge was made:
// Unix nanoseconds on its replica's clock. With Options.HMACKey, MAC is the signature of
// every other field, over the stream's name (the scheme of stored values, wire.go), so that
// neither another key's message nor a value's MAC passes for one. The same JSON goes to the
// purges channel, where replicas of earlier versions read Kind, Value, ID and Done, and
// ignore the rest.
type message struct {
	Kind  string `json:",omitempty"`
	Value string `json:",omitempty"`
	ID    string `json:",omitempty"`
	At    int64  `json:",omitempty"`
	Done  bool   `json:",omitempty"`
	MAC   []byte `json:",omitempty"`
}

const (
	// messageVersion heads the signed bytes of a message, as formatVersion heads a value's.
	messageVersion = 1
	// maxIDLength bounds a message's ID: newPurgeID's are 24 characters.
	maxIDLength = 64
	// maxMessageBytes bounds what is parsed at all: a value at its limit (maxURLBytes),
	// every byte escaped as \u00XX, and the other fields.
	maxMessageBytes = 6*maxURLBytes + 1024
)

// The reasons a message is refused, as edge_shared_cache_purges_refused_total counts them.
var (
	errUnsigned  = errors.New("no MAC, and purges must carry one (edge.shared_cache_key)")
	errBadMAC    = errors.New("the MAC does not match (another key, or a message not written by an edge with this store's key)")
	errTooLarge  = errors.New("an entry over the purge stream's limit (PurgeLogOptions.MaxEntryBytes): not read")
	errMalformed = errors.New("not a purge message")
)

// refusals are the reasons' labels, in the order of Store.counts.refused; the last is
// refusal's default.
var refusals = [...]struct {
	err    error
	reason string
}{{errUnsigned, "unsigned"}, {errBadMAC, "bad_mac"}, {errTooLarge, "too_large"}, {errMalformed, "malformed"}}

// refusal is the index in refusals of why err refused a message.
func refusal(err error) int {
	for i, r := range refusals {
		if errors.Is(err, r.err) {
			return i
		}
	}
	return len(refusals) - 1
}

// Purge is the purge m carries.
func (m message) Purge() Purge { return Purge{Kind: m.Kind, Value: m.Value} }

// made is when the purge m carries was made.
func (m message) made() time.Time { return time.Unix(0, m.At) }

// signed is m signed for the stream streamKey with macKey; m itself when macKey is nil.
func (m message) signed(streamKey string, macKey []byte) message {
	m.MAC = nil
	if macKey != nil {
		m.MAC = m.signature(streamKey, macKey)
	}
	return m
}

// signature is the MAC of every field of m but MAC.
func (m message) signature(streamKey string, macKey []byte) []byte {
	b := appendString(nil, m.Kind)
	b = appendString(b, m.Value)
	b = appendString(b, m.ID)
	b = binary.AppendVarint(b, m.At)
	if m.Done {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return signature(macKey, streamKey, []byte{messageVersion}, b)
}

func (m message) encode() string {
	b, _ := json.Marshal(m) // strings, numbers, bytes and a bool: it cannot fail
	return string(b)
}

// parseMessage reads an entry of the stream streamKey, which any client of the store may
// write: anything but a valid purge or Done, signed with macKey when it is set, is an
// error wrapping errUnsigned, errBadMAC or errMalformed. Without macKey, a MAC is not
// checked.
func parseMessage(payload, streamKey string, macKey []byte) (message, error) {
	if len(payload) > maxMessageBytes {
		return message{}, fmt.Errorf("%w: %d bytes", errMalformed, len(payload))
	}
	var m message
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return message{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	switch {
	case m.ID == "" || len(m.ID) > maxIDLength:
		return message{}, fmt.Errorf("%w: an ID of %d bytes", errMalformed, len(m.ID))
	case m.At <= 0:
		return message{}, fmt.Errorf("%w: made at %d", errMalformed, m.At)
	case m.MAC != nil && len(m.MAC) != macSize:
		return message{}, fmt.Errorf("%w: a MAC of %d bytes", errMalformed, len(m.MAC))
	case m.Done && (m.Kind != "" || m.Value != ""):
		return message{}, fmt.Errorf("%w: Done names an ID, and no purge", errMalformed)
	}
	if !m.Done {
		if err := m.Purge().valid(); err != nil {
			return message{}, fmt.Errorf("%w: %w", errMalformed, err)
		}
	}
	switch {
	case macKey == nil:
	case m.MAC == nil:
		return message{}, errUnsigned
	case !hmac.Equal(m.MAC, m.signature(streamKey, macKey)):
		return message{}, errBadMAC
	}
	return m, nil
}
