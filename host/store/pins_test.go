package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcphost-project/mcphost/host/store"
)

// TestPins: a pin is written only at the version the writer saw (0: none
// yet), on every driver, and the pins revision moves with each change.
func TestPins(t *testing.T) {
	t.Parallel()
	for name, o := range stores(t, nil) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := open(t, o), open(t, o)
			rev0, err := a.PinsRevision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v1, err := a.PutPin(ctx, "pin", "up/echo", []byte(`{"sha256":"1"}`), 0)
			if err != nil {
				t.Fatal(err)
			}
			// Another replica's first pin of the same tool is refused.
			if _, err := b.PutPin(ctx, "pin", "up/echo", []byte(`{"sha256":"2"}`), 0); !errors.Is(err, store.ErrPinChanged) {
				t.Fatalf("a second first pin: %v", err)
			}
			v2, err := b.PutPin(ctx, "pin", "up/echo", []byte(`{"sha256":"3"}`), v1)
			if err != nil || v2 <= v1 {
				t.Fatalf("update at the version seen: %d, %v", v2, err)
			}
			if _, err := a.PutPin(ctx, "pin", "up/echo", nil, v1); !errors.Is(err, store.ErrPinChanged) {
				t.Fatalf("a delete at an old version: %v", err)
			}
			if _, err := a.PutPin(ctx, "other", "up/time", []byte(`{"sha256":"4"}`), 0); err != nil {
				t.Fatal(err)
			}
			pins, rev, err := a.Pins(ctx, "pin")
			if err != nil || len(pins) != 1 || string(pins[0].Entry) != `{"sha256":"3"}` || pins[0].Version != v2 || rev <= rev0 {
				t.Fatalf("Pins = %+v at %d, %v", pins, rev, err)
			}
			if _, err := a.PutPin(ctx, "pin", "up/echo", nil, v2); err != nil {
				t.Fatal(err)
			}
			if pins, _, _ := b.Pins(ctx, "pin"); len(pins) != 0 {
				t.Fatalf("after the delete: %+v", pins)
			}
		})
	}
}
