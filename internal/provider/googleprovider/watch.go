package googleprovider

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	gcal "google.golang.org/api/calendar/v3"

	"github.com/oncecall/oncecall/internal/provider/calendar"
)

// WatchTTL is how long a watch channel is asked to live (Google may give
// it less; the channel's expiration says).
const WatchTTL = 7 * 24 * time.Hour

// Watch opens a watch channel on the events of each calendar
// (events.watch): Google then posts a notification to address at every
// change, with secret as the channel's token (X-Goog-Channel-Token), and
// a first one whose resource state is "sync".
func (c *Calendar) Watch(ctx context.Context, calendars []string, address, secret string) ([]calendar.Watched, error) {
	var out []calendar.Watched
	for _, cal := range calendars {
		ch, err := c.svc.Events.Watch(cal, &gcal.Channel{
			Id: "oncecall-" + uuid.NewString(), Type: "web_hook", Address: address, Token: secret,
			Params: map[string]string{"ttl": strconv.Itoa(int(WatchTTL.Seconds()))},
		}).Context(ctx).Do()
		if err != nil {
			return out, fmt.Errorf("watch calendar %s: %w", cal, err)
		}
		w := calendar.Watched{Calendar: cal, ID: ch.Id}
		if ch.Expiration > 0 {
			w.Expires = time.UnixMilli(ch.Expiration).UTC()
		}
		out = append(out, w)
	}
	return out, nil
}
