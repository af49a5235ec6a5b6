package migrate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/windlass-cd/windlass/internal/notifications"
)

// notifications plans Argo CD Notifications: argocd-notifications-cm's
// triggers, templates, services, subscriptions, defaultTriggers and
// context become the notifications settings, and
// argocd-notifications-secret's keys the notifications secret that their
// $references name. A key Windlass cannot take is refused with why, and
// the rest goes on; a key that needs a refused one is refused too.
func (b *builder) notifications(ctx context.Context) error {
	if b.src.Notifications == nil && b.src.NotificationsSecret == nil {
		return nil
	}
	curConfig, curKeys, err := b.cur.Notifications(ctx)
	if err != nil {
		return err
	}
	b.notificationsSecret(curKeys)
	data := maps.Clone(b.src.Notifications)
	var cfg *notifications.Config
	// Each round drops the keys in error; a key that referred to a
	// dropped one fails in the next.
	for len(data) > 0 {
		if cfg, err = notifications.Parse(data); err == nil {
			break
		}
		bad := notifications.KeyErrors(err)
		if len(bad) == 0 {
			b.plan.add("Notifications", NotificationsCMName, ActionRefuse, err.Error(), nil)
			return nil
		}
		for _, ke := range bad {
			b.plan.add("Notifications", NotificationsCMName+" "+ke.Key, ActionRefuse, notificationsReason(ke.Err), nil)
			delete(data, ke.Key)
		}
	}
	if len(data) == 0 {
		return nil
	}
	text, err := yaml.Marshal(data)
	if err != nil {
		return err
	}
	config := string(text)
	reason := notificationsSummary(cfg) + ": saved as the notifications settings (PUT /api/v1/settings/notifications)"
	action := ActionCreate
	switch {
	case curConfig == config:
		action = ActionUnchanged
	case curConfig != "":
		action, reason = ActionUpdate, reason+", replacing Windlass's"
	}
	b.plan.add("Notifications", NotificationsCMName, action, reason, func(ctx context.Context, w Writer) error {
		return w.PutNotifications(ctx, config)
	})
	return nil
}

// notificationsSecret plans copying argocd-notifications-secret's keys
// into the notifications secret. Values are not compared: the API never
// returns them.
func (b *builder) notificationsSecret(curKeys []string) {
	src := b.src.NotificationsSecret
	if len(src) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(src))
	reason := "keys " + strings.Join(keys, ", ") + ": the notifications secret, which the configuration's $references name"
	missing := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(curKeys, k) })
	action := ActionCreate
	switch {
	case len(missing) == 0:
		b.plan.add("NotificationsSecret", NotificationsSecretName, ActionUnchanged, reason+"; set (secret values are not compared)", nil)
		return
	case len(missing) < len(keys):
		action = ActionUpdate
	}
	data := maps.Clone(src)
	b.plan.add("NotificationsSecret", NotificationsSecretName, action, reason, func(ctx context.Context, w Writer) error {
		return w.PutNotificationsSecret(ctx, data)
	})
}

// notificationsReason is why a key is refused, with what to do about a
// credential written in the configuration.
func notificationsReason(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "$reference") {
		msg += "; move the value into " + NotificationsSecretName + " and name it as $<key>"
	}
	return msg
}

// notificationsSummary counts what a configuration defines.
func notificationsSummary(cfg *notifications.Config) string {
	var triggers, templates, services int
	var extra []string
	for k := range cfg.Data {
		switch {
		case strings.HasPrefix(k, "trigger."):
			triggers++
		case strings.HasPrefix(k, "template."):
			templates++
		case strings.HasPrefix(k, "service."):
			services++
		default:
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	parts := []string{plural(triggers, "trigger"), plural(templates, "template"), plural(services, "service")}
	return strings.Join(append(parts, extra...), ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
