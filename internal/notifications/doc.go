// Package notifications reads notification settings in the layout of Argo
// CD's argocd-notifications-cm (trigger.*, template.*, service.*,
// subscriptions, defaultTriggers, context), decides which notifications an
// application's state calls for, and renders their messages.
//
// It is pure: it sends nothing and reads no secret. A service's credential
// is a reference ("$name", a key of the notifications secret) that the
// delivery activity resolves when it sends. Parse validates everything a
// delivery would otherwise find out late: templates parse, conditions
// compile, subscriptions name known services and triggers, and recipient
// lists stay under MaxRecipients. Keys and fields it does not support are
// refused by name.
package notifications
